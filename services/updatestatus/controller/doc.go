// Package controller is the update-status-controller's reconciler: a thin
// shell around the pure assess package and a pure plan.
//
// Every watched object (ClusterVersion, ClusterOperators, MachineConfigPools,
// MachineConfigs, Nodes) maps to one work item, so a burst of changes — a
// pool of nodes moving at once — coalesces into one recomputation. Each
// recomputation reads the informer cache, assesses the whole cluster, and
// decide (plan.go) turns the published and the desired state into a plan:
// the UpgradeStatus status to write and the Events of that transition, the
// NodeProgressInsights to create, relabel, update or delete, the prototype
// ConfigMap's value, and when to recompute next. The reconciler executes the
// plan and decides nothing: it hands the node
// writes and the status to background publishers (publisher.go,
// statuspublisher.go) and does not wait for them; the status publisher
// records the Events once a write that includes them succeeds, so a failed
// write cannot lose an Event. Published objects (with the writes handed
// over and not yet in the cache) are passed back to the assessment, so
// insight identities and transition times survive restarts. Recomputations
// are paced (libs/pace) so that they take at most about half of the time and
// begin at least MinRecomputeInterval apart.
//
// Nothing is polled. The assessment says when its result would next change
// with the same objects (an operator degraded long enough to report, an
// update turning Slow, an estimate moving), and while the cluster updates the
// Heartbeat condition wants a refresh every minute; the reconciler requeues
// at the earlier of the two, and not at all when neither is pending.
package controller
