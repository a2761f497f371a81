package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	operatorv1 "github.com/openshift/api/operator/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	arov1alpha1 "github.com/upshift-io/upshift/api/aro/v1alpha1"
	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"

	"github.com/upshift-io/upshift/libs/events"
	"github.com/upshift-io/upshift/services/aromonitor/azure"
	"github.com/upshift-io/upshift/services/aromonitor/clusterstatus"
	"github.com/upshift-io/upshift/services/aromonitor/nsg"
	"github.com/upshift-io/upshift/services/aromonitor/ownership"
	"github.com/upshift-io/upshift/services/aromonitor/serviceendpoints"
	"github.com/upshift-io/upshift/services/aromonitor/subnets"
)

// NSGFieldManager owns the NSG check's status fields.
const NSGFieldManager = "aro-monitor-nsg"

// Reasons of the NSG check's conditions and Events.
const (
	ReasonCheckDisabled          = nsg.ReasonCheckDisabled
	ReasonARMUnavailable         = nsg.ReasonARMUnavailable
	ReasonCredentialsUnavailable = nsg.ReasonCredentialsUnavailable
	ReasonConfigurationInvalid   = nsg.ReasonConfigurationInvalid
	ReasonNotSuppressed          = nsg.ReasonNotSuppressed
	EventReassociated            = nsg.EventReassociated
	EventReassociationFailed     = nsg.EventReassociationFailed
	EventDrift                   = nsg.EventDrift
	EventSuppressed              = nsg.EventSuppressed
	// EventServiceEndpointsAdded and EventServiceEndpointsFailed: a PUT
	// added a subnet's missing service endpoints, or failed to.
	EventServiceEndpointsAdded  = "ServiceEndpointsAdded"
	EventServiceEndpointsFailed = "ServiceEndpointsAddFailed"
	// ActionAddServiceEndpoints is the remediation metric's action label.
	ActionAddServiceEndpoints = "add-service-endpoints"
)

// NSGReconciler checks that every cluster subnet is associated with the
// cluster's network security group and, in Remediate mode, re-associates it
// within the guard rails of package nsg.
type NSGReconciler struct {
	Client   client.Client
	Recorder *events.Recorder
	Clock    clock.PassiveClock
	Azure    *azure.Factory
	// Credentials is the Secret holding the cluster's Azure identity.
	Credentials types.NamespacedName
	// MachineNamespace holds the Machines and MachineSets.
	MachineNamespace string
	// Observe records a remediation outcome for the metrics (may be nil).
	Observe func(action, result string)
}

var clusterKey = reconcile.Request{NamespacedName: types.NamespacedName{Name: arov1alpha1.SingletonName}}

// SetupWithManager: the Cluster, MonitorConfig, master Machines, MachineSets,
// the credentials Secret and ARO operator's deployments all map to the one
// work item; the interval requeue catches drift made in Azure, which no
// watch can see.
func (r *NSGReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("nsg").
		Watches(&arov1alpha1.Cluster{}, toCluster, specChanged()).
		Watches(&amv1alpha1.MonitorConfig{}, toCluster, specChanged()).
		Watches(&machinev1beta1.Machine{}, toCluster, masterMachineChanged()).
		Watches(&machinev1beta1.MachineSet{}, toCluster, specChanged()).
		Watches(&corev1.Secret{}, toCluster, named(r.Credentials)).
		Watches(&appsv1.Deployment{}, toCluster, aroOperatorDeployments()).
		Complete(r)
}

// Reconcile runs the check once over every cluster subnet: package nsg
// decides, subnet by subnet as ARM answers; the reconciler reads, carries
// out the re-associations it asks for, and writes and records what it
// returns.
func (r *NSGReconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	snap, err := load(ctx, r.Client)
	if err != nil || snap == nil {
		return reconcile.Result{}, err
	}
	// The budget in force is the MonitorConfig's (its default without one).
	r.Azure.SetRequestsPerMinute(snap.settings.ARMRequestsPerMinute)
	d, err := decideOwnership(ctx, r.Client, snap.settings.Ownership, amv1alpha1.CheckNSG)
	if err != nil {
		return reconcile.Result{}, err
	}
	pass := &nsg.Pass{Cluster: snap.cluster, Prev: snap.record, Policy: snap.settings.NSG, Interval: snap.settings.NSGInterval, Now: r.Clock.Now()}
	if d.Ownership == amv1alpha1.OwnershipObserve && pass.Policy.Mode == nsg.Remediate {
		// ARO's subnet controller re-associates: a second remediator would
		// take it for a tug-of-war, and it us.
		pass.Policy.Mode = nsg.Observe
	}
	w := &nsgWriter{r: r, owner: d, prevCheck: clusterstatus.FindCheck(snap.record.Checks, amv1alpha1.CheckNSG),
		endpoints: clusterstatus.ConditionByType(snap.record.Conditions, amv1alpha1.SubnetServiceEndpoints), prevConds: snap.record.Conditions}
	seMode := snap.settings.ServiceEndpoints
	if d.Ownership == amv1alpha1.OwnershipObserve && seMode == serviceendpoints.Remediate {
		seMode = serviceendpoints.Observe
	}
	if pass.Policy.Mode == nsg.Off {
		w.setEndpoints(serviceendpoints.Condition(serviceendpoints.Off, snap.settings.ServiceEndpointsOffWhy, nil))
		return w.finish(ctx, pass.Off())
	}
	found, problems, err := r.discover(ctx, snap.cluster.Spec)
	if err != nil {
		// Not an error for the workqueue: the objects read are as they are
		// until a watch says otherwise; the interval retries all the same.
		return w.finish(ctx, pass.Unavailable(ReasonConfigurationInvalid, err.Error(), false))
	}
	client, err := r.subnetsClient(ctx, snap.cluster.Spec)
	if err != nil {
		return w.finish(ctx, pass.Unavailable(ReasonCredentialsUnavailable, err.Error(), true))
	}
	var endpoints []serviceendpoints.Finding
	for i, sn := range found {
		target := r.subnet(sn)
		got, err := client.Get(ctx, sn.ResourceGroup, sn.VNet, sn.Name, nil)
		if err != nil {
			pass.ReadFailed(target, err)
			endpoints = append(endpoints, serviceendpoints.Finding{Subnet: sn.Name, Unread: true})
			continue
		}
		se := serviceendpoints.Finding{Subnet: sn.Name}
		if seMode != serviceendpoints.Off {
			se.Missing = serviceendpoints.Missing(got.Subnet)
		}
		var add []string
		if seMode == serviceendpoints.Remediate {
			add = se.Missing
		}
		if !pass.Subnet(target, attachedNSG(got.Subnet)) {
			if len(add) > 0 {
				// The endpoints alone: a PUT of the subnet as read.
				_, se.Err = r.put(ctx, client, sn, got.Subnet, "", add)
				se.Added = se.Err == nil
				r.observeEndpoints(se)
			}
			endpoints = append(endpoints, se)
			continue
		}
		// One PUT re-associates the group and adds the endpoints.
		reached, err := r.put(ctx, client, sn, got.Subnet, sn.ExpectedNSG, add)
		if len(add) > 0 {
			se.Added, se.Err = err == nil, err
			r.observeEndpoints(se)
		}
		endpoints = append(endpoints, se)
		if !pass.Reassociated(reached, err) {
			continue
		}
		// A PUT reached Azure Resource Manager: its record is stored before
		// anything else is done (a budget is recorded before it is spent
		// again).
		todo := make([]nsg.Subnet, 0, len(found)-i-1)
		for _, rest := range found[i+1:] {
			todo = append(todo, r.subnet(rest))
		}
		if err := w.apply(ctx, pass.Progress(todo)); err != nil {
			// Not returned as an error: the workqueue would retry within
			// seconds, each retry free to PUT again without the record.
			log.FromContext(ctx).Error(err, "recording a re-association failed; the next pass is after the interval", "subnet", sn.ID)
			res := pass.StoreFailed()
			r.observe(res.Outcomes)
			r.Recorder.Record(res.Events...)
			return reconcile.Result{RequeueAfter: wait.Jitter(res.Requeue, 0.1)}, nil
		}
		if err == nil {
			w.reconciled = true
		}
	}
	var errs []string
	for _, p := range problems {
		errs = append(errs, fmt.Sprintf("%s: %v", p.Object, p.Err))
	}
	pass.Problems(errs)
	w.setEndpoints(serviceendpoints.Condition(seMode, snap.settings.ServiceEndpointsOffWhy, endpoints))
	res := pass.Done()
	if len(res.Errors) > 0 {
		log.FromContext(ctx).Info("NSG check incomplete", "errors", res.Errors)
	}
	return w.finish(ctx, res)
}

// nsgWriter writes one pass's status with who owns the check, and tells the
// resource provider about re-associations as ARO's subnet controller does.
type nsgWriter struct {
	r         *NSGReconciler
	owner     ownership.Decision
	prevCheck amv1alpha1.CheckStatus
	// reconciled: a subnet was re-associated in this pass.
	reconciled bool
	// endpoints is SubnetServiceEndpoints as recorded until the pass
	// decides it (nil: none yet), written with every apply of the pass.
	endpoints *operatorv1.OperatorCondition
	prevConds []operatorv1.OperatorCondition
}

// setEndpoints decides SubnetServiceEndpoints for this pass.
func (w *nsgWriter) setEndpoints(c operatorv1.OperatorCondition) {
	c = clusterstatus.Condition(w.prevConds, c, w.r.Clock.Now())
	w.endpoints = &c
}

func (w *nsgWriter) apply(ctx context.Context, st amv1alpha1.MonitorConfigStatus) error {
	for i := range st.Checks {
		st.Checks[i] = withOwnership(st.Checks[i], w.owner)
	}
	if w.endpoints != nil {
		st.Conditions = append(st.Conditions, *w.endpoints)
	}
	return applyStatus(ctx, w.r.Client, NSGFieldManager, st)
}

// finish writes a pass's status, marks the Cluster when a subnet was
// re-associated, then records the pass's Events.
func (w *nsgWriter) finish(ctx context.Context, res nsg.Result) (reconcile.Result, error) {
	r := w.r
	r.observe(res.Outcomes)
	if err := w.apply(ctx, res.Status); err != nil {
		return reconcile.Result{}, err
	}
	if w.reconciled {
		if err := markSubnetReconcile(ctx, r.Client, r.Clock.Now()); err != nil {
			return reconcile.Result{}, err
		}
	}
	r.Recorder.Record(append(res.Events, ownershipEvents(amv1alpha1.CheckNSG, w.prevCheck, w.owner)...)...)
	if res.Exact {
		return reconcile.Result{RequeueAfter: res.Requeue}, nil
	}
	return reconcile.Result{RequeueAfter: wait.Jitter(res.Requeue, 0.1)}, nil
}

// subnet is what package nsg needs of a subnet found on the Machines.
func (r *NSGReconciler) subnet(sn subnets.Subnet) nsg.Subnet {
	out := nsg.Subnet{ID: sn.ID, Name: sn.Name, ExpectedNSG: sn.ExpectedNSG}
	if sn.Object != "" {
		out.Related = &corev1.ObjectReference{APIVersion: machinev1beta1.GroupVersion.String(), Kind: sn.Kind,
			Namespace: r.MachineNamespace, Name: sn.Object}
	}
	return out
}

func (r *NSGReconciler) discover(ctx context.Context, spec arov1alpha1.ClusterSpec) ([]subnets.Subnet, []subnets.Problem, error) {
	var machines machinev1beta1.MachineList
	if err := r.Client.List(ctx, &machines, client.InNamespace(r.MachineNamespace)); err != nil {
		return nil, nil, err
	}
	var sets machinev1beta1.MachineSetList
	if err := r.Client.List(ctx, &sets, client.InNamespace(r.MachineNamespace)); err != nil {
		return nil, nil, err
	}
	return subnets.Discover(spec, machines.Items, sets.Items)
}

func (r *NSGReconciler) subnetsClient(ctx context.Context, spec arov1alpha1.ClusterSpec) (*armnetwork.SubnetsClient, error) {
	secret := &corev1.Secret{}
	if err := r.Client.Get(ctx, r.Credentials, secret); err != nil {
		return nil, fmt.Errorf("reading the credentials Secret %s: %w", r.Credentials, err)
	}
	id, err := azure.IdentityFromSecret(secret)
	if err != nil {
		return nil, err
	}
	cloudCfg, err := r.Azure.CloudFor(spec.AZEnvironment)
	if err != nil {
		return nil, err
	}
	cred, err := r.Azure.Credential(id, cloudCfg)
	if err != nil {
		return nil, err
	}
	sub, err := subnets.SubscriptionOf(spec.ResourceID)
	if err != nil {
		return nil, err
	}
	return r.Azure.Subnets(sub, cred, cloudCfg)
}

// ReassociateTimeout bounds one PUT of a subnet and the polling of its
// long-running operation: ARM may never finish it.
const ReassociateTimeout = 2 * time.Minute

// put PUTs the subnet as read with the expected group (nsgID, "" to leave
// the association as it is) and the missing service endpoints added.
// reached says the request got an answer from ARM (it may have acted, so
// it counts). One PUT per subnet per pass does both, as the subnet's two
// changes must not race each other.
func (r *NSGReconciler) put(ctx context.Context, c *armnetwork.SubnetsClient, sn subnets.Subnet, current armnetwork.Subnet, nsgID string, endpoints []string) (reached bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, ReassociateTimeout)
	defer cancel()
	// The PUT carries the subnet as read, with only the group replaced and
	// endpoints added, so nothing else on the subnet changes; ARM's etag is
	// not sent, as ARO does not either, so a concurrent change elsewhere on
	// the subnet wins over nothing but these.
	if current.Properties == nil {
		current.Properties = &armnetwork.SubnetPropertiesFormat{}
	}
	if nsgID != "" {
		current.Properties.NetworkSecurityGroup = &armnetwork.SecurityGroup{ID: to.Ptr(nsgID)}
	}
	serviceendpoints.Add(&current, endpoints)
	poller, err := c.BeginCreateOrUpdate(ctx, sn.ResourceGroup, sn.VNet, sn.Name, current, nil)
	if err != nil {
		var re *azcore.ResponseError
		return errors.As(err, &re), err
	}
	// Accepted: whatever the polling says, ARM may have acted.
	_, err = poller.PollUntilDone(ctx, &runtime.PollUntilDoneOptions{Frequency: 2 * time.Second})
	return true, err
}

// observeEndpoints counts and records an attempt to add service endpoints.
func (r *NSGReconciler) observeEndpoints(f serviceendpoints.Finding) {
	mc := &amv1alpha1.MonitorConfig{ObjectMeta: metav1.ObjectMeta{Name: amv1alpha1.SingletonName}}
	missing := strings.Join(f.Missing, ", ")
	if f.Err != nil {
		r.observe([]nsg.Outcome{{Action: ActionAddServiceEndpoints, Result: "error"}})
		r.Recorder.Record(events.Warning(mc, EventServiceEndpointsFailed, "AddServiceEndpoints",
			fmt.Sprintf("adding %s to subnet %s: %v", missing, f.Subnet, f.Err)))
		return
	}
	r.observe([]nsg.Outcome{{Action: ActionAddServiceEndpoints, Result: "success"}})
	r.Recorder.Record(events.Normal(mc, EventServiceEndpointsAdded, "AddServiceEndpoints",
		fmt.Sprintf("added %s to subnet %s", missing, f.Subnet)))
}

func (r *NSGReconciler) observe(outcomes []nsg.Outcome) {
	if r.Observe == nil {
		return
	}
	for _, o := range outcomes {
		r.Observe(o.Action, o.Result)
	}
}

// markSubnetReconcile sets the Cluster's lastSubnetReconcileTimestamp, as
// ARO's subnet controller does after it re-associated a subnet: a merge
// patch of that one annotation, in ARO's format (RFC 1123). Only a pass that
// re-associated marks it — in Observe mode none does — so the resource
// provider's NSG reconciliation metric counts the same events as with ARO.
func markSubnetReconcile(ctx context.Context, c client.Client, now time.Time) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		arov1alpha1.LastSubnetReconcileAnnotation: now.UTC().Format(time.RFC1123)}}})
	if err != nil {
		return err
	}
	cluster := &arov1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: arov1alpha1.SingletonName}}
	return c.Patch(ctx, cluster, client.RawPatch(types.MergePatchType, patch))
}

func attachedNSG(s armnetwork.Subnet) string {
	if s.Properties == nil || s.Properties.NetworkSecurityGroup == nil || s.Properties.NetworkSecurityGroup.ID == nil {
		return ""
	}
	return *s.Properties.NetworkSecurityGroup.ID
}
