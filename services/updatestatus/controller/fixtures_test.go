package controller_test

import (
	"context"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/gomega"
	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	updateac "github.com/upshift-io/upshift/api/update/v1alpha1/applyconfiguration/update/v1alpha1"
)

// A small cluster updating from 4.18.0 to 4.18.1, written the way the
// OpenShift operators write it.
const (
	fromVersion = "4.18.0"
	toVersion   = "4.18.1"

	annoCurrent = "machineconfiguration.openshift.io/currentConfig"
	annoDesired = "machineconfiguration.openshift.io/desiredConfig"
	annoState   = "machineconfiguration.openshift.io/state"
	annoRelease = "machineconfiguration.openshift.io/release-image-version"
)

func createClusterVersion(ctx context.Context, c client.Client, started time.Time) {
	cv := &configv1.ClusterVersion{
		ObjectMeta: metav1.ObjectMeta{Name: "version"},
		Spec:       configv1.ClusterVersionSpec{ClusterID: "00000000-0000-0000-0000-000000000001", Channel: "stable-4.18"},
	}
	Expect(c.Create(ctx, cv)).To(Succeed())
	cv.Status = configv1.ClusterVersionStatus{
		Desired:            configv1.Release{Version: toVersion, Image: "quay.io/openshift-release-dev/ocp-release:" + toVersion},
		ObservedGeneration: cv.Generation,
		VersionHash:        "abc",
		History: []configv1.UpdateHistory{
			{State: configv1.PartialUpdate, Version: toVersion, Image: "img:" + toVersion, StartedTime: metav1.NewTime(started)},
			{State: configv1.CompletedUpdate, Version: fromVersion, Image: "img:" + fromVersion,
				StartedTime: metav1.NewTime(started.Add(-48 * time.Hour)), CompletionTime: ptrTime(started.Add(-47 * time.Hour))},
		},
		Conditions: []configv1.ClusterOperatorStatusCondition{
			{Type: configv1.OperatorAvailable, Status: configv1.ConditionTrue, LastTransitionTime: metav1.NewTime(started)},
			{Type: configv1.OperatorProgressing, Status: configv1.ConditionTrue, Message: "Working towards " + toVersion,
				LastTransitionTime: metav1.NewTime(started)},
			{Type: "Failing", Status: configv1.ConditionFalse, LastTransitionTime: metav1.NewTime(started)},
		},
	}
	Expect(c.Status().Update(ctx, cv)).To(Succeed())
}

func completeClusterVersion(ctx context.Context, c client.Client, at time.Time) {
	cv := &configv1.ClusterVersion{}
	Expect(c.Get(ctx, client.ObjectKey{Name: "version"}, cv)).To(Succeed())
	cv.Status.History[0].State = configv1.CompletedUpdate
	cv.Status.History[0].CompletionTime = ptrTime(at)
	for i := range cv.Status.Conditions {
		if cv.Status.Conditions[i].Type == configv1.OperatorProgressing {
			cv.Status.Conditions[i].Status = configv1.ConditionFalse
			cv.Status.Conditions[i].Message = "Cluster version is " + toVersion
			cv.Status.Conditions[i].LastTransitionTime = metav1.NewTime(at)
		}
	}
	Expect(c.Status().Update(ctx, cv)).To(Succeed())
}

func createClusterOperator(ctx context.Context, c client.Client, name, version string, since time.Time) {
	co := &configv1.ClusterOperator{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
		"include.release.openshift.io/self-managed-high-availability": "true",
	}}}
	Expect(c.Create(ctx, co)).To(Succeed())
	setClusterOperator(ctx, c, name, version, since)
}

func setClusterOperator(ctx context.Context, c client.Client, name, version string, since time.Time) {
	co := &configv1.ClusterOperator{}
	Expect(c.Get(ctx, client.ObjectKey{Name: name}, co)).To(Succeed())
	co.Status.Versions = []configv1.OperandVersion{{Name: "operator", Version: version}}
	co.Status.Conditions = []configv1.ClusterOperatorStatusCondition{
		{Type: configv1.OperatorAvailable, Status: configv1.ConditionTrue, LastTransitionTime: metav1.NewTime(since)},
		{Type: configv1.OperatorDegraded, Status: configv1.ConditionFalse, LastTransitionTime: metav1.NewTime(since)},
		{Type: configv1.OperatorProgressing, Status: configv1.ConditionFalse, LastTransitionTime: metav1.NewTime(since)},
	}
	Expect(c.Status().Update(ctx, co)).To(Succeed())
}

func createRenderedConfig(ctx context.Context, c client.Client, name, version string) {
	Expect(c.Create(ctx, &mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{
		Name: name, Annotations: map[string]string{annoRelease: version},
	}})).To(Succeed())
}

func createPool(ctx context.Context, c client.Client, name, config string, machines int32) {
	pool := &mcfgv1.MachineConfigPool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: mcfgv1.MachineConfigPoolSpec{
			NodeSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/" + name: ""}},
			MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"machineconfiguration.openshift.io/role": name}},
			Configuration:         mcfgv1.MachineConfigPoolStatusConfiguration{ObjectReference: corev1.ObjectReference{Name: config}},
		},
	}
	Expect(c.Create(ctx, pool)).To(Succeed())
	pool.Status = mcfgv1.MachineConfigPoolStatus{
		Configuration: mcfgv1.MachineConfigPoolStatusConfiguration{ObjectReference: corev1.ObjectReference{Name: config}},
		MachineCount:  machines, UpdatedMachineCount: machines, ReadyMachineCount: machines,
		Conditions: []mcfgv1.MachineConfigPoolCondition{
			{Type: mcfgv1.MachineConfigPoolUpdated, Status: corev1.ConditionTrue},
			{Type: mcfgv1.MachineConfigPoolUpdating, Status: corev1.ConditionFalse},
		},
	}
	Expect(c.Status().Update(ctx, pool)).To(Succeed())
}

// retargetPool points a pool at a new rendered config, as the MCO does
// before it moves any node.
func retargetPool(ctx context.Context, c client.Client, name, config string) {
	pool := &mcfgv1.MachineConfigPool{}
	Expect(c.Get(ctx, client.ObjectKey{Name: name}, pool)).To(Succeed())
	before := pool.DeepCopy()
	pool.Spec.Configuration.Name = config
	Expect(c.Patch(ctx, pool, client.MergeFrom(before))).To(Succeed())
}

func createNode(ctx context.Context, c client.Client, name, role, config string) {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:        name,
		Labels:      map[string]string{"node-role.kubernetes.io/" + role: ""},
		Annotations: map[string]string{annoCurrent: config, annoDesired: config, annoState: "Done"},
	}}
	Expect(c.Create(ctx, n)).To(Succeed())
	before := n.DeepCopy()
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
		LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	Expect(c.Status().Patch(ctx, n, client.MergeFrom(before))).To(Succeed())
}

func annotateNode(ctx context.Context, c client.Client, name string, annotations map[string]string) {
	n := &corev1.Node{}
	Expect(c.Get(ctx, client.ObjectKey{Name: name}, n)).To(Succeed())
	before := n.DeepCopy()
	for k, v := range annotations {
		n.Annotations[k] = v
	}
	Expect(c.Patch(ctx, n, client.MergeFrom(before))).To(Succeed())
}

func ptrTime(t time.Time) *metav1.Time { mt := metav1.NewTime(t); return &mt }

func degradeClusterOperator(ctx context.Context, name string, since time.Time) {
	co := &configv1.ClusterOperator{}
	Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, co)).To(Succeed())
	for i := range co.Status.Conditions {
		if co.Status.Conditions[i].Type == configv1.OperatorDegraded {
			co.Status.Conditions[i].Status = configv1.ConditionTrue
			co.Status.Conditions[i].Reason = "Broken"
			co.Status.Conditions[i].LastTransitionTime = metav1.NewTime(since)
		}
	}
	Expect(env.Client.Status().Update(ctx, co)).To(Succeed())
}

// touchNode changes a label nobody reads: a Node event, so a recomputation.
func touchNode(ctx context.Context, name string) {
	node := &corev1.Node{}
	Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, node)).To(Succeed())
	patch := client.MergeFrom(node.DeepCopy())
	node.Labels["touched"] = time.Now().Format("150405.000000")
	Expect(env.Client.Patch(ctx, node, patch)).To(Succeed())
}

// refuseWrites makes the apiserver refuse every update of the named object
// of resource (a resource of the update group, "upgradestatuses/status" for
// a subresource) with a ValidatingAdmissionPolicy, and returns a function
// that lifts the refusal. It returns once the apiserver enforces the policy.
func refuseWrites(ctx context.Context, resource, name string) func() {
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "refuse-" + strings.ReplaceAll(resource, "/", "-") + "-" + name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{updatev1alpha1.GroupVersion.Group},
						APIVersions: []string{updatev1alpha1.GroupVersion.Version},
						Resources:   []string{resource}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: "object.metadata.name != '" + name + "'",
				Message:    "test: writes to this object are refused",
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policy.Name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
	}
	Expect(env.Client.Create(ctx, policy)).To(Succeed())
	Expect(env.Client.Create(ctx, binding)).To(Succeed())
	probe := func() error {
		patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"probe":"x"}}}`))
		if resource == "upgradestatuses/status" {
			us := &updatev1alpha1.UpgradeStatus{ObjectMeta: metav1.ObjectMeta{Name: name}}
			return env.Client.Status().Patch(ctx, us, patch, client.DryRunAll)
		}
		npi := &updatev1alpha1.NodeProgressInsight{ObjectMeta: metav1.ObjectMeta{Name: name}}
		return env.Client.Patch(ctx, npi, patch, client.DryRunAll)
	}
	Eventually(probe).WithTimeout(20 * time.Second).Should(MatchError(ContainSubstring("refused")))
	return func() {
		Expect(env.Client.Delete(ctx, binding)).To(Succeed())
		Expect(env.Client.Delete(ctx, policy)).To(Succeed())
		Eventually(probe).WithTimeout(20 * time.Second).Should(Succeed())
	}
}

// insightWrites sits between the controllers the specs start and the API
// server: it counts the applies of each NodeProgressInsight and can hold
// those of one insight until released.
var insightWrites = &applyGate{held: map[string]chan struct{}{}, applies: map[string]int{}}

type applyGate struct {
	mu      sync.Mutex
	held    map[string]chan struct{}
	applies map[string]int
}

// gatedClient is c with its NodeProgressInsight applies passing through g.
// Not controller-runtime's interceptor, as the aro-monitor specs use: it
// wraps only a client.WithWatch, and the manager's cached client is not one.
type gatedClient struct {
	client.Client
	g *applyGate
}

func (c gatedClient) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	if npi, ok := obj.(*updateac.NodeProgressInsightApplyConfiguration); ok {
		name := *npi.GetName()
		c.g.mu.Lock()
		c.g.applies[name]++
		wait := c.g.held[name]
		c.g.mu.Unlock()
		if wait != nil {
			select {
			case <-wait:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return c.Client.Apply(ctx, obj, opts...)
}

// hold makes the applies of name's insight wait until the returned
// function is called.
func (g *applyGate) hold(name string) (release func()) {
	ch := make(chan struct{})
	g.mu.Lock()
	g.held[name] = ch
	g.mu.Unlock()
	return func() {
		g.mu.Lock()
		delete(g.held, name)
		g.mu.Unlock()
		close(ch)
	}
}

// count is the applies of name's insight so far, held ones included.
func (g *applyGate) count(name string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.applies[name]
}

func cordonNode(ctx context.Context, name string, cordoned bool) {
	node := &corev1.Node{}
	Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, node)).To(Succeed())
	patch := client.MergeFrom(node.DeepCopy())
	node.Spec.Unschedulable = cordoned
	Expect(env.Client.Patch(ctx, node, patch)).To(Succeed())
}
