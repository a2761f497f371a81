// Package v1alpha1 holds the update.upshift.io/v1alpha1 API: the update status
// that the update-status-controller publishes and `kubectl upshift status` renders.
//
// The insight types follow the openshift/api Update Status drafts (field
// names from PR #2012, fresh install represented as in PR #2233).
// The drafts were never merged upstream, so Upshift owns this schema. Where it
// departs from the drafts, it does so to carry everything the renderer needs to
// print exactly what `oc adm upgrade status` prints, without reading the cluster:
//
//   - ControlPlaneAssessment also allows "Progressing - Slow" and "Stalled",
//     the values oc derives from its remaining-time estimate.
//   - ClusterOperatorStatusInsight.progressingReason keeps the operator's own
//     Progressing reason (the Updating condition's reason is from a fixed
//     vocabulary, as conditions require CamelCase reasons).
//   - NodeStatusInsight.message allows 4096 characters instead of 100, because
//     the MCD's degradation reason is printed in full.
//   - HealthInsight.startedAt is optional (absent = unknown, printed as "-"),
//     HealthInsight carries a uid, and ScopeType also allows "Cluster" (alerts).
//   - remediation.reference is not CEL-checked as a URL: alerts without a
//     runbook_url annotation carry oc's placeholder text.
//   - UpgradeStatus flattens the draft's informers into fixed fields:
//     controlPlane, workerPools and health.
//
// +kubebuilder:object:generate=true
// +kubebuilder:ac:generate=true
// +groupName=update.upshift.io
package v1alpha1
