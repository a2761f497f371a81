package controller_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	operatorv1 "github.com/openshift/api/operator/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	arov1alpha1 "github.com/upshift-io/upshift/api/aro/v1alpha1"
	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"
	"github.com/upshift-io/upshift/services/aromonitor/azure"
	"github.com/upshift-io/upshift/services/aromonitor/controller"
	"github.com/upshift-io/upshift/services/aromonitor/ownership"
	"github.com/upshift-io/upshift/services/aromonitor/probe"
	"github.com/upshift-io/upshift/tools/azuresim"
)

var _ = Describe("beside ARO's operator", Ordered, func() {
	var a *azureCluster
	req := reconcile.Request{NamespacedName: types.NamespacedName{Name: "cluster"}}
	// What ARO's operator keeps on the Cluster besides the types
	// aro-monitor may write, in ARO's order.
	then := metav1.NewTime(t0.Add(-24 * time.Hour))
	foreign := []operatorv1.OperatorCondition{
		{Type: "GuardRailsStatus", Status: operatorv1.ConditionTrue, Reason: "CheckDone", LastTransitionTime: then},
		{Type: "DefaultIngressCertificate", Status: operatorv1.ConditionFalse, Reason: "CheckFailed", Message: "missing ingress certificate", LastTransitionTime: then},
		{Type: "CPMSControllerAvailable", Status: operatorv1.ConditionTrue, LastTransitionTime: then},
	}
	foreignOf := func(conds []operatorv1.OperatorCondition) []operatorv1.OperatorCondition {
		var out []operatorv1.OperatorCondition
		for _, c := range conds {
			switch c.Type {
			case arov1alpha1.InternetReachableFromMaster, arov1alpha1.InternetReachableFromWorker, arov1alpha1.ServicePrincipalValid, arov1alpha1.MachineValid:
			default:
				out = append(out, c)
			}
		}
		return out
	}
	// pass runs every master check once, each by a fresh reconciler (as
	// after a restart), and a worker agent's round.
	pass := func(ctx context.Context) {
		cloud := a.arm.Cloud()
		az := azure.NewFactory(azure.Options{Cloud: &cloud, Transport: a.arm.Client(), GraphScope: azuresim.GraphAudience + "/.default", RequestsPerMinute: 600})
		for _, r := range []reconcile.Reconciler{
			&controller.CredentialsReconciler{Client: env.Client, Recorder: recorder, Clock: a.clock, Credentials: a.creds, Azure: az},
			a.reconciler(),
			&controller.ProbeReconciler{Client: env.Client, Recorder: recorder, Clock: a.clock, Prober: &probe.Prober{}, Role: amv1alpha1.RoleMaster, Name: "master"},
			&controller.ProbeReconciler{Client: env.Client, Clock: a.clock, Prober: &probe.Prober{}, Role: amv1alpha1.RoleWorker, Name: "worker"},
			&controller.WorkerConditionReconciler{Client: env.Client, Recorder: recorder, Clock: a.clock, MachineNamespace: machNS},
			&controller.MachinesReconciler{Client: env.Client, Recorder: recorder, Clock: a.clock, MachineNamespace: machNS},
		} {
			_, err := r.Reconcile(ctx, req)
			Expect(err).NotTo(HaveOccurred())
		}
	}
	checkOf := func(st amv1alpha1.MonitorConfigStatus, name amv1alpha1.CheckName) amv1alpha1.CheckStatus {
		for _, c := range st.Checks {
			if c.Name == name {
				return c
			}
		}
		return amv1alpha1.CheckStatus{}
	}

	BeforeAll(func(ctx context.Context) {
		a = newAzureCluster(ctx)
		c := cluster(ctx)
		c.Status.Conditions = append([]operatorv1.OperatorCondition(nil), foreign...)
		Expect(env.Client.Status().Update(ctx, c)).To(Succeed())
	})

	It("keeps every other writer's conditions, unchanged and in place, through an hour of passes and restarts", func(ctx context.Context) {
		for range 12 {
			pass(ctx)
			a.clock.Step(5 * time.Minute)
		}
		conds := cluster(ctx).Status.Conditions
		Expect(foreignOf(conds)).To(BeComparableTo(foreign))
		Expect(conds[:len(foreign)]).To(BeComparableTo(foreign), "ARO's own first, where it put them")
		for _, t := range []string{arov1alpha1.InternetReachableFromMaster, arov1alpha1.InternetReachableFromWorker, arov1alpha1.ServicePrincipalValid, arov1alpha1.MachineValid} {
			Expect(conditionOf(conds, t).Type).To(Equal(t), "aro-monitor replaces ARO's checks here and writes %s", t)
		}
		Expect(conditionOf(conds, amv1alpha1.NSGAssociated).Type).To(BeEmpty(), "its own findings stay on its MonitorConfig")
		Expect(cluster(ctx).Annotations).To(HaveKey(arov1alpha1.LastSubnetReconcileAnnotation), "the detached worker subnet was re-associated")
		at, err := time.Parse(time.RFC1123, cluster(ctx).Annotations[arov1alpha1.LastSubnetReconcileAnnotation])
		Expect(err).NotTo(HaveOccurred(), "ARO's format: the resource provider parses it")
		Expect(at).To(BeTemporally("==", t0.Truncate(time.Second)), "marked by the one pass that re-associated")
	})

	It("observes the checks ARO's operator runs: never writes their conditions nor re-associates, and says so", func(ctx context.Context) {
		changed := emitted.count(controller.EventOwnershipChanged)
		dep := aroDeployment(ownership.MasterDeployment, 1)
		Expect(env.Client.Create(ctx, dep)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(env.Client.Delete(ctx, dep)).To(Succeed()) })
		// ARO's checker says the principal is valid; aro-monitor will find
		// it expired, and must leave ARO's answer alone.
		c := cluster(ctx)
		for i := range c.Status.Conditions {
			if c.Status.Conditions[i].Type == arov1alpha1.ServicePrincipalValid {
				c.Status.Conditions[i] = operatorv1.OperatorCondition{Type: arov1alpha1.ServicePrincipalValid, Status: operatorv1.ConditionTrue,
					Reason: "Validation Successful", Message: "Service Principal is valid", LastTransitionTime: then}
			}
		}
		Expect(env.Client.Status().Update(ctx, c)).To(Succeed())
		a.arm.SetSubnetNSG(vnetPath+"worker", "")
		puts := a.puts()

		a.clock.Step(2 * time.Hour) // past any budget or suppression
		pass(ctx)
		Expect(a.puts()).To(Equal(puts), "ARO's subnet controller re-associates, not aro-monitor")
		st := record(ctx)
		Expect(conditionOf(st.Conditions, amv1alpha1.NSGAssociated).Status).To(Equal(operatorv1.ConditionFalse), "the drift is reported all the same")
		for _, name := range []amv1alpha1.CheckName{amv1alpha1.CheckInternetMaster, amv1alpha1.CheckCredentials, amv1alpha1.CheckNSG, amv1alpha1.CheckMachines} {
			ch := checkOf(st, name)
			Expect(ch.Ownership).To(Equal(amv1alpha1.OwnershipObserve), "%s", name)
			Expect(ch.OwnershipMessage).To(ContainSubstring("openshift-azure-operator/aro-operator-master"))
		}
		Expect(checkOf(st, amv1alpha1.CheckInternetWorker).Ownership).To(Equal(amv1alpha1.OwnershipReplace), "the worker deployment does not run")
		Expect(emitted.count(controller.EventOwnershipChanged)).To(Equal(changed+4), "one Event per check that changed hands")

		before := cluster(ctx).Status.Conditions
		a.arm.UpdateApp(clientID, func(app *azuresim.App) { app.SecretExpired = true })
		a.bumpSecret(ctx, nil)
		a.clock.Step(time.Minute)
		pass(ctx)
		Expect(conditionOf(record(ctx).Conditions, arov1alpha1.ServicePrincipalValid).Status).To(Equal(operatorv1.ConditionFalse), "what aro-monitor found, on its own object")
		Expect(conditionOf(cluster(ctx).Status.Conditions, arov1alpha1.ServicePrincipalValid)).To(BeComparableTo(conditionOf(before, arov1alpha1.ServicePrincipalValid)),
			"ARO's answer on the Cluster is ARO's")

		// An administrator declares aro-monitor the replacement.
		a.arm.UpdateApp(clientID, func(app *azuresim.App) { app.SecretExpired = false })
		a.bumpSecret(ctx, nil)
		setOwnership(ctx, amv1alpha1.OwnershipAlwaysReplace)
		DeferCleanup(setOwnership, amv1alpha1.OwnershipAuto)
		a.clock.Step(time.Minute)
		pass(ctx)
		Expect(a.puts()).To(Equal(puts+1), "re-associated once it owns the check")
		mine := conditionOf(record(ctx).Conditions, arov1alpha1.ServicePrincipalValid)
		theirs := conditionOf(cluster(ctx).Status.Conditions, arov1alpha1.ServicePrincipalValid)
		Expect([]string{string(theirs.Status), theirs.Reason, theirs.Message}).To(Equal([]string{string(mine.Status), mine.Reason, mine.Message}))
		Expect(foreignOf(cluster(ctx).Status.Conditions)).To(BeComparableTo(foreign))
	})

	It("takes a check over when ARO's deployment is scaled to zero", func(ctx context.Context) {
		dep := aroDeployment(ownership.WorkerDeployment, 0)
		Expect(env.Client.Create(ctx, dep)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(env.Client.Delete(ctx, dep)).To(Succeed()) })
		a.clock.Step(time.Minute)
		pass(ctx)
		ch := checkOf(record(ctx), amv1alpha1.CheckInternetWorker)
		Expect(ch.Ownership).To(Equal(amv1alpha1.OwnershipReplace))
		Expect(ch.OwnershipMessage).To(ContainSubstring("scaled to zero"))

		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(dep), dep)).To(Succeed())
		dep.Spec.Replicas = ptr.To[int32](1)
		Expect(env.Client.Update(ctx, dep)).To(Succeed())
		pass(ctx)
		Expect(checkOf(record(ctx), amv1alpha1.CheckInternetWorker).Ownership).To(Equal(amv1alpha1.OwnershipObserve))
	})
})

// aroDeployment is one of ARO operator's deployments, as far as aro-monitor
// reads it.
func aroDeployment(name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ownership.Namespace},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "aro-operator", Image: "aro:latest"}}}}},
	}
}

// setOwnership sets the MonitorConfig's spec.ownership.
func setOwnership(ctx context.Context, p amv1alpha1.OwnershipPolicy) {
	mc := &amv1alpha1.MonitorConfig{}
	Expect(env.Client.Get(ctx, client.ObjectKey{Name: amv1alpha1.SingletonName}, mc)).To(Succeed())
	mc.Spec.Ownership = p
	Expect(env.Client.Update(ctx, mc)).To(Succeed())
}
