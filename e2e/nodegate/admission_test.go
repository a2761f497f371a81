package nodegate

import (
	"context"
	"errors"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	"github.com/upshift-io/upshift/libs/scheme"
	"github.com/upshift-io/upshift/services/nodegate/plan"
)

// listedTeam is the namespace whose rules the chart lets run hook Jobs in
// node-gate's namespace (ruleJobNamespaces).
const listedTeam = "team-b"

// ruleAuthor is a user who may write MutexRules and create Jobs in team
// only: what a team that owns a workload is given.
func ruleAuthor(ctx context.Context, team string) client.Client {
	GinkgoHelper()
	Expect(env.CreateNamespace(ctx, team)).To(Succeed())
	const name = "rule-author"
	Expect(env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: name}})).To(Succeed())
	Expect(env.Client.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: name}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{nodegatev1alpha1.GroupVersion.Group}, Resources: []string{"mutexrules"}, Verbs: []string{"get", "create", "update"}},
		{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"create"}},
	}})).To(Succeed())
	Expect(env.Client.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: team, Name: name}}})).To(Succeed())
	cfg, err := env.ServiceAccountConfig(ctx, team, name)
	Expect(err).NotTo(HaveOccurred())
	c, err := client.New(cfg, client.Options{Scheme: scheme.Scheme})
	Expect(err).NotTo(HaveOccurred())
	return c
}

// hookRule is a rule in namespace ns whose Jobs run in jobNamespace as
// account ("" for the namespace's default).
func hookRule(name, ns, jobNamespace, account string) *nodegatev1alpha1.MutexRule {
	spec := hookSpec("pre")
	spec.Template.Spec.ServiceAccountName = account
	return &nodegatev1alpha1.MutexRule{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: nodegatev1alpha1.MutexRuleSpec{JobName: name, JobNamespace: jobNamespace, Type: nodegatev1alpha1.RuleTypeKubernetes, JobSpec: spec}}
}

// admission: the chart's policy keeps a rule from borrowing privileges
// through node-gate.
func admission(ctx SpecContext) {
	const team = "team-a"
	author := ruleAuthor(ctx, team)

	By("a rule whose Jobs run where its author may create Jobs anyway: accepted, any ServiceAccount of that namespace")
	Expect(author.Create(ctx, hookRule("own", team, team, "builder"))).To(Succeed())

	By("a rule whose Jobs would run in node-gate's namespace, where its author may not create Jobs: refused, naming spec.jobNamespace")
	err := author.Create(ctx, hookRule("borrow", team, namespace, ""))
	Expect(err).To(MatchError(ContainSubstring("spec.jobNamespace: system:serviceaccount:team-a:rule-author may not create Jobs in namespace " + namespace)))

	By("node-gate's own ServiceAccount, even for an administrator: refused, naming the field")
	own := hookRule("as-node-gate", namespace, namespace, id.ServiceAccount)
	err = env.Client.Create(ctx, own)
	Expect(err).To(MatchError(ContainSubstring("spec.jobSpec.template.spec.serviceAccountName: a hook cannot run as node-gate's own ServiceAccount " + namespace + "/" + id.ServiceAccount)))
	pre := hookRule("pre-as-node-gate", namespace, namespace, "")
	pre.Spec.PreHooks = []nodegatev1alpha1.Hook{{Name: "fence", JobSpec: *hookSpec("fence")}}
	pre.Spec.PreHooks[0].JobSpec.Template.Spec.DeprecatedServiceAccount = id.ServiceAccount
	err = env.Client.Create(ctx, pre)
	Expect(err).To(MatchError(ContainSubstring("spec.preHooks[].jobSpec.template.spec.serviceAccountName: a hook cannot run as node-gate's own ServiceAccount")))

	By("a rule whose Jobs run outside its own namespace, not listed for it: refused even for an administrator, naming spec.jobNamespace")
	err = env.Client.Create(ctx, hookRule("unlisted", team, namespace, ""))
	Expect(err).To(MatchError(ContainSubstring("spec.jobNamespace: the MutexRules of namespace " + team + " may run hook Jobs only in " + team +
		" (the chart's ruleJobNamespaces), not in " + namespace)))

	By("the same from the namespace the chart lists node-gate's namespace for: accepted, and valid for node-gate")
	Expect(env.CreateNamespace(ctx, listedTeam)).To(Succeed())
	Expect(env.Client.Create(ctx, hookRule("listed", listedTeam, namespace, ""))).To(Succeed())
	Eventually(validConfig(ctx, listedTeam, "listed")).Should(HavePrefix("True/ValidConfig/"))

	By("a rule accepted before it changed hands is judged again when its spec changes")
	accepted := &nodegatev1alpha1.MutexRule{}
	Expect(author.Get(ctx, client.ObjectKey{Namespace: team, Name: "own"}, accepted)).To(Succeed())
	accepted.Spec.JobNamespace = namespace
	Expect(author.Update(ctx, accepted)).To(MatchError(ContainSubstring("spec.jobNamespace:")))

	By("node-gate reports the accepted rule's ValidConfig: False, its Jobs outside node-gate's job namespaces")
	Eventually(validConfig(ctx, team, "own")).Should(HavePrefix(`False/InvalidConfig/spec.jobNamespace "team-a" is not one of node-gate's job namespaces`))

	By("a rule naming node-gate's ServiceAccount made while the policy was unbound: node-gate reports it, naming the field")
	withoutPolicy(ctx, func() error {
		return env.Client.Create(ctx, hookRule("before-policy", namespace, namespace, id.ServiceAccount))
	})
	Eventually(validConfig(ctx, namespace, "before-policy")).Should(Equal("False/InvalidConfig/spec.jobSpec.template.spec.serviceAccountName: a hook cannot run as node-gate's own ServiceAccount " +
		namespace + "/" + id.ServiceAccount))
	Expect(env.Client.Delete(ctx, &nodegatev1alpha1.MutexRule{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "before-policy"}})).To(Succeed())
}

// validConfig reads rule ns/name's ValidConfig condition as
// "<status>/<reason>/<message>".
func validConfig(ctx context.Context, ns, name string) func(Gomega) string {
	return func(g Gomega) string {
		got := &nodegatev1alpha1.MutexRule{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, got)).To(Succeed())
		c := meta.FindStatusCondition(got.Status.Conditions, plan.ConditionValidConfig)
		g.Expect(c).NotTo(BeNil())
		return string(c.Status) + "/" + c.Reason + "/" + c.Message
	}
}

// withoutPolicy runs create while the chart's hook-identity policy is
// unbound (as on a cluster where it was removed, or before it was
// installed), then binds it again and waits until the API server enforces
// it once more.
func withoutPolicy(ctx context.Context, create func() error) {
	GinkgoHelper()
	var bindings admissionregistrationv1.ValidatingAdmissionPolicyBindingList
	Expect(env.Client.List(ctx, &bindings)).To(Succeed())
	var binding *admissionregistrationv1.ValidatingAdmissionPolicyBinding
	for i := range bindings.Items {
		if strings.HasSuffix(bindings.Items[i].Name, "-hook-identity") {
			binding = bindings.Items[i].DeepCopy()
		}
	}
	Expect(binding).NotTo(BeNil(), "the chart's hook-identity binding")
	Expect(env.Client.Delete(ctx, binding)).To(Succeed())
	// The API server drops the binding from its policies asynchronously:
	// until it has, create is refused.
	Eventually(create).Should(Succeed())
	binding.ResourceVersion, binding.UID = "", ""
	Expect(env.Client.Create(ctx, binding)).To(Succeed())
	probe := hookRule("", namespace, namespace, id.ServiceAccount)
	probe.GenerateName, probe.Spec.JobName = "policy-probe-", "policy-probe"
	Eventually(func() error {
		p := probe.DeepCopy()
		if err := env.Client.Create(ctx, p); err != nil {
			return err
		}
		Expect(env.Client.Delete(ctx, p)).To(Succeed())
		return errors.New("the policy is not enforced yet")
	}).Should(MatchError(ContainSubstring("a hook cannot run as node-gate's own ServiceAccount")))
}
