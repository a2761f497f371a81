package assess

import (
	"testing"

	configv1 "github.com/openshift/api/config/v1"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
)

// TestMCOImage: the machine-config operator is updated when its version is
// the target and the image it reports is the Deployment's; an image that
// cannot be read is unknown, which must not hold the operator back (a
// cluster whose Deployment cannot be read would otherwise never complete).
func TestMCOImage(t *testing.T) {
	const target = "4.18.1"
	withImage := func(version, image string) configv1.ClusterOperator {
		c := co(machineConfigOperator, version)
		if image != "" {
			c.Status.Versions = append(c.Status.Versions, configv1.OperandVersion{Name: "operator-image", Version: image})
		}
		return c
	}
	tests := []struct {
		name         string
		co           configv1.ClusterOperator
		mcoImage     string
		unknown      bool
		wantUpdated  bool
		wantComplete int32 // with etcd (updated) and kube-apiserver (not)
	}{
		{"same image", withImage(target, "mco@new"), "mco@new", false, true, 67},
		{"deployment moved to another image", withImage(target, "mco@old"), "mco@new", false, false, 33},
		{"known empty image (oc without a Deployment file)", withImage(target, "mco@new"), "", false, false, 33},
		{"unknown image: version decides", withImage(target, "mco@new"), "", true, true, 67},
		{"unknown image, old version", withImage("4.18.0", "mco@old"), "", true, false, 33},
		{"no operator-image version: image does not matter", withImage(target, ""), "mco@new", false, true, 67},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := classifyOperator(&tc.co, target, tc.mcoImage, !tc.unknown)
			if st.updated != tc.wantUpdated {
				t.Errorf("updated = %v, want %v", st.updated, tc.wantUpdated)
			}
			s := baseSnapshot()
			s.ClusterOperators = append(s.ClusterOperators, tc.co)
			s.MCOImage, s.MCOImageUnknown = tc.mcoImage, tc.unknown
			cp := mustAssess(t, s).Status.ControlPlane
			if got := cp.ClusterVersion.Completion; got != tc.wantComplete {
				t.Errorf("completion = %d, want %d", got, tc.wantComplete)
			}
			for _, in := range cp.ClusterOperators {
				if in.Name != machineConfigOperator {
					continue
				}
				for _, c := range in.Conditions {
					if c.Type == updatev1alpha1.ConditionUpdating && (c.Reason == updatev1alpha1.ReasonUpdated) != tc.wantUpdated {
						t.Errorf("machine-config Updating reason = %q, want updated: %v", c.Reason, tc.wantUpdated)
					}
				}
			}
		})
	}
}
