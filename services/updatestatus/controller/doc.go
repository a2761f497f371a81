// Package controller is the update-status-controller's reconciler: a thin
// shell around the pure assess package.
//
// Every watched object (ClusterVersion, ClusterOperators, MachineConfigPools,
// MachineConfigs, Nodes) maps to one work item, so a burst of changes — a
// pool of nodes moving at once — coalesces into one recomputation. Each
// recomputation reads the informer cache, assesses the whole cluster, and
// writes only what differs from what is published: the UpgradeStatus status,
// the NodeProgressInsight of each node whose insight changed, and the
// prototype ConfigMap key. Published objects are passed back to the
// assessment, so insight identities and transition times survive restarts.
package controller
