package plan

import (
	"crypto/sha256"
	"fmt"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// nameAlphabet is Kubernetes' own alphabet for generated name suffixes
// (no vowels, no look-alikes), so names look like the upstream operator's.
const nameAlphabet = "bcdfghjklmnpqrstvwxz2456789"

// machineName is "<base>-<5 chars>-<index>", base being the set's
// machineNamePrefix or "<cluster id>-<role>". The 5 characters are derived
// from the set, the index, the desired spec and the retry count, not drawn
// at random: deciding the same replacement twice (a restart, a cache that
// lags) yields the same name, and the second create fails with
// AlreadyExists instead of doubling the surge. A retry after remediation or
// a new spec yields a new name. The index stays the last "-" segment, which
// other tooling parses.
func (p *planner) machineName(g *group, retries int) string {
	cpms := p.in.CPMS
	base := cpms.Spec.MachineNamePrefix
	if base == "" {
		labels := cpms.Spec.Template.OpenShiftMachineV1Beta1Machine.ObjectMeta.Labels
		role := labels[RoleLabel]
		if role == "" {
			role = "master"
		}
		base = role
		if id := labels[ClusterIDLabel]; id != "" {
			base = id + "-" + role
		}
	}
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s/%d/%s/%d", cpms.UID, g.index, g.specHash, retries)))
	suffix := make([]byte, 5)
	for i := range suffix {
		suffix[i] = nameAlphabet[int(sum[i])%len(nameAlphabet)]
	}
	return fmt.Sprintf("%s-%s-%d", base, suffix, g.index)
}

// newMachine is the Machine to create for index g: the template with the
// index's failure domain injected, owned by the set.
func (p *planner) newMachine(g *group, retries int) *machinev1beta1.Machine {
	cpms := p.in.CPMS
	tmpl := cpms.Spec.Template.OpenShiftMachineV1Beta1Machine
	m := &machinev1beta1.Machine{
		TypeMeta: metav1.TypeMeta{APIVersion: "machine.openshift.io/v1beta1", Kind: "Machine"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      p.machineName(g, retries),
			Namespace: cpms.Namespace,
			Labels:    map[string]string{},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "machine.openshift.io/v1", Kind: "ControlPlaneMachineSet",
				Name: cpms.Name, UID: cpms.UID, Controller: ptr(true), BlockOwnerDeletion: ptr(true),
			}},
		},
		Spec: *tmpl.Spec.DeepCopy(),
	}
	for k, v := range tmpl.ObjectMeta.Labels {
		m.Labels[k] = v
	}
	if len(tmpl.ObjectMeta.Annotations) > 0 {
		m.Annotations = map[string]string{}
		for k, v := range tmpl.ObjectMeta.Annotations {
			m.Annotations[k] = v
		}
	}
	m.Spec.ProviderSpec.Value = &runtime.RawExtension{Raw: append([]byte(nil), g.desired...)}
	return m
}

func ptr[T any](v T) *T { return &v }
