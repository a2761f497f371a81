package controller

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	arov1alpha1 "github.com/upshift-io/upshift/api/aro/v1alpha1"
	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"

	"github.com/upshift-io/upshift/services/aromonitor/azure"
	"github.com/upshift-io/upshift/services/aromonitor/nsg"
	"github.com/upshift-io/upshift/services/aromonitor/subnets"
)

// NSGFieldManager owns the NSG check's status fields.
const NSGFieldManager = "aro-monitor-nsg"

// Reasons of the NSG check's conditions and Events.
const (
	ReasonCheckDisabled          = "CheckDisabled"
	ReasonARMUnavailable         = "ARMUnavailable"
	ReasonCredentialsUnavailable = "CredentialsUnavailable"
	ReasonConfigurationInvalid   = "ConfigurationInvalid"
	ReasonNotSuppressed          = "NotSuppressed"
	EventReassociated            = "NSGReassociated"
	EventReassociationFailed     = "NSGReassociationFailed"
	EventDrift                   = "NSGDrift"
	EventSuppressed              = "RemediationSuppressed"
)

// NSGReconciler checks that every cluster subnet is associated with the
// cluster's network security group and, in Remediate mode, re-associates it
// within the guard rails of package nsg.
type NSGReconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
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

// SetupWithManager: the Cluster, MonitorConfig, master Machines, MachineSets
// and the credentials Secret all map to the one work item; the interval
// requeue catches drift made in Azure, which no watch can see.
func (r *NSGReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	one := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{clusterKey}
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("nsg").
		Watches(&arov1alpha1.Cluster{}, one, specChanged()).
		Watches(&amv1alpha1.MonitorConfig{}, one).
		Watches(&machinev1beta1.Machine{}, one, masterMachineChanged()).
		Watches(&machinev1beta1.MachineSet{}, one, specChanged()).
		Watches(&corev1.Secret{}, one, named(r.Credentials)).
		Complete(r)
}

// Reconcile runs the check once over every cluster subnet.
func (r *NSGReconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	snap, err := load(ctx, r.Client)
	if err != nil || snap == nil {
		return reconcile.Result{}, err
	}
	now := r.Clock.Now()
	policy := snap.settings.NSG
	interval := snap.settings.NSGInterval
	// The budget in force is the MonitorConfig's (its default without one).
	r.Azure.SetRequestsPerMinute(snap.settings.ARMRequestsPerMinute)
	prev := snap.cluster.Status

	out := nsgStatus{check: findCheck(prev.Checks, arov1alpha1.CheckNSG), read: map[string]bool{}}
	out.check.LastCheckTime = ptrTime(now)
	// On the paths that read no subnet, the subnets' records are carried
	// over as they are: the status is applied, and a list left out would
	// delete every record this manager owns — the budget spent, a running
	// suppression — e.g. while the credentials Secret is recreated.
	keep := func(c operatorv1.OperatorCondition, res reconcile.Result) (reconcile.Result, error) {
		out.associated, out.subnets = c, prev.Subnets
		sup := suppression(out.subnets, now)
		if policy.Mode == nsg.Off && sup.Status != operatorv1.ConditionTrue {
			sup = operatorv1.OperatorCondition{Type: arov1alpha1.RemediationSuppressed, Status: operatorv1.ConditionFalse,
				Reason: ReasonCheckDisabled, Message: "the check is off: aro.azuresubnets.enabled is false"}
		}
		out.suppressed = &sup
		return res, r.write(ctx, snap.cluster, out, now)
	}
	if policy.Mode == nsg.Off {
		// Requeued all the same: a suppression recorded before the check
		// was switched off must still be seen to end.
		return keep(unknown(arov1alpha1.NSGAssociated, ReasonCheckDisabled, "the check is off: aro.azuresubnets.enabled is false"),
			reconcile.Result{RequeueAfter: wait.Jitter(interval, 0.1)})
	}

	found, problems, err := r.discover(ctx, snap.cluster.Spec)
	if err != nil {
		// Not an error for the workqueue: the objects read are as they are
		// until a watch says otherwise; the interval retries all the same.
		return keep(unknown(arov1alpha1.NSGAssociated, ReasonConfigurationInvalid, err.Error()),
			reconcile.Result{RequeueAfter: wait.Jitter(interval, 0.1)})
	}
	client, err := r.subnetsClient(ctx, snap.cluster.Spec)
	if err != nil {
		return keep(unknown(arov1alpha1.NSGAssociated, ReasonCredentialsUnavailable, err.Error()),
			reconcile.Result{RequeueAfter: min(interval, time.Minute)})
	}

	var armErrs []string
	for i, sn := range found {
		st, armErr, put := r.checkSubnet(ctx, client, sn, findSubnet(prev.Subnets, sn.ID), now, policy)
		out.subnets = append(out.subnets, st)
		if armErr != "" {
			armErrs = append(armErrs, armErr)
		} else {
			out.read[st.ID] = true
		}
		if !put {
			continue
		}
		// A PUT reached Azure Resource Manager: its record is stored before
		// anything else is done, so neither a later failure in this pass
		// nor a crash can forget it and spend the budget again.
		if err := r.persist(ctx, snap.cluster, out.subnets, found[i+1:], now); err != nil {
			// Not returned as an error: the workqueue would retry within
			// seconds, each retry free to PUT again without the record.
			log.FromContext(ctx).Error(err, "recording a re-association failed; the next pass is after the interval", "subnet", sn.ID)
			return reconcile.Result{RequeueAfter: wait.Jitter(interval, 0.1)}, nil
		}
	}
	for _, p := range problems {
		armErrs = append(armErrs, fmt.Sprintf("%s: %v", p.Object, p.Err))
	}
	out.summarise(armErrs, now)
	if len(armErrs) > 0 {
		log.FromContext(ctx).Info("NSG check incomplete", "errors", armErrs)
		// Retry sooner than the interval, but bounded: ARM is the one
		// throttling us, or it is down. A failed re-association is in its
		// record already, so the budget bounds the retries.
		interval = min(interval, time.Minute)
	}
	return reconcile.Result{RequeueAfter: wait.Jitter(interval, 0.1)}, r.write(ctx, snap.cluster, out, now)
}

// persist stores the subnets' records mid-pass: the ones done so far, the
// ones still to do as they were. The conditions and the check's times stay
// as they were until the pass ends.
func (r *NSGReconciler) persist(ctx context.Context, cluster *arov1alpha1.Cluster, done []arov1alpha1.SubnetStatus, todo []subnets.Subnet, now time.Time) error {
	prev := cluster.Status
	s := nsgStatus{check: findCheck(prev.Checks, arov1alpha1.CheckNSG), subnets: append([]arov1alpha1.SubnetStatus(nil), done...)}
	for _, sn := range todo {
		if rec := findSubnet(prev.Subnets, sn.ID); rec.ID != "" {
			s.subnets = append(s.subnets, rec)
		}
	}
	if c := conditionByType(prev.Conditions, arov1alpha1.NSGAssociated); c != nil {
		s.associated = *c
	}
	if c := conditionByType(prev.Conditions, arov1alpha1.RemediationSuppressed); c != nil {
		s.suppressed = c
	}
	return r.write(ctx, cluster, s, now)
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

// checkSubnet reads one subnet, decides and acts. It returns the subnet's
// new status, when ARM could not be asked or refused, why, and whether a
// re-association reached ARM (its record must be stored at once).
func (r *NSGReconciler) checkSubnet(ctx context.Context, c *armnetwork.SubnetsClient, sn subnets.Subnet, prev arov1alpha1.SubnetStatus, now time.Time, policy nsg.Policy) (arov1alpha1.SubnetStatus, string, bool) {
	st := prev
	st.ID = strings.ToLower(sn.ID)
	st.ExpectedNSG = sn.ExpectedNSG
	got, err := c.Get(ctx, sn.ResourceGroup, sn.VNet, sn.Name, nil)
	if err != nil {
		return st, fmt.Sprintf("reading subnet %s: %s", sn.ID, armReason(err)), false
	}
	st.LastCheckTime = ptrTime(now)
	st.AttachedNSG = attachedNSG(got.Subnet)
	obs := nsg.Observation{Expected: sn.ExpectedNSG, Attached: st.AttachedNSG}
	d := nsg.Decide(obs, toRecord(prev), now, policy)
	cluster := &arov1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: arov1alpha1.SingletonName}}
	// The events library folds Events that differ only in their note into
	// one series: without a related object per subnet, a second subnet's
	// re-association would only bump the first one's count.
	var related kruntime.Object
	if sn.Object != "" {
		related = &corev1.ObjectReference{APIVersion: machinev1beta1.GroupVersion.String(), Kind: sn.Kind,
			Namespace: r.MachineNamespace, Name: sn.Object}
	}
	switch d.Action {
	case nsg.Report:
		// Once per drift, not once per pass.
		if !prevDrifted(prev) {
			r.Recorder.Eventf(cluster, related, corev1.EventTypeWarning, EventDrift, "Check", "Subnet %s: %s", sn.Name, d.Message)
		}
	case nsg.Suppress:
		r.Recorder.Eventf(cluster, related, corev1.EventTypeWarning, EventSuppressed, "Reassociate", "Subnet %s: %s", sn.Name, d.Message)
		r.observe("suppress", "done")
	case nsg.Reassociate:
		reached, err := r.reassociate(ctx, c, sn, got.Subnet)
		if err != nil {
			r.Recorder.Eventf(cluster, related, corev1.EventTypeWarning, EventReassociationFailed, "Reassociate",
				"Subnet %s: re-associating %s failed: %s", sn.Name, sn.ExpectedNSG, armReason(err))
			r.observe("reassociate", "error")
			msg := fmt.Sprintf("re-associating subnet %s: %s", sn.ID, armReason(err))
			if !reached {
				// Nothing reached ARM (the client's own rate limit, a
				// connection refused): nothing to count.
				return st, msg, false
			}
			// ARM refused or failed it: the attempt counts against the
			// budget, or a lasting 403 or 409 would be retried every pass.
			d.Record.LastFailed = true
			return fromRecord(st, d.Record), msg, true
		}
		st.AttachedNSG = sn.ExpectedNSG
		r.Recorder.Eventf(cluster, related, corev1.EventTypeNormal, EventReassociated, "Reassociate", "Subnet %s: %s", sn.Name, d.Message)
		r.observe("reassociate", "success")
		return fromRecord(st, d.Record), "", true
	}
	return fromRecord(st, d.Record), "", false
}

// ReassociateTimeout bounds one re-association, the PUT and the polling of
// its long-running operation: ARM may never finish it.
const ReassociateTimeout = 2 * time.Minute

// reassociate PUTs the subnet with the expected group. reached says the
// request got an answer from ARM (it may have acted, so it counts).
func (r *NSGReconciler) reassociate(ctx context.Context, c *armnetwork.SubnetsClient, sn subnets.Subnet, current armnetwork.Subnet) (reached bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, ReassociateTimeout)
	defer cancel()
	// The PUT carries the subnet as read, with only the group replaced, so
	// nothing else on the subnet changes; ARM's etag is not sent, as ARO
	// does not either, so a concurrent change elsewhere on the subnet wins
	// over nothing but the association.
	if current.Properties == nil {
		current.Properties = &armnetwork.SubnetPropertiesFormat{}
	}
	current.Properties.NetworkSecurityGroup = &armnetwork.SecurityGroup{ID: to.Ptr(sn.ExpectedNSG)}
	poller, err := c.BeginCreateOrUpdate(ctx, sn.ResourceGroup, sn.VNet, sn.Name, current, nil)
	if err != nil {
		var re *azcore.ResponseError
		return errors.As(err, &re), err
	}
	// Accepted: whatever the polling says, ARM may have acted.
	_, err = poller.PollUntilDone(ctx, &runtime.PollUntilDoneOptions{Frequency: 2 * time.Second})
	return true, err
}

func (r *NSGReconciler) observe(action, result string) {
	if r.Observe != nil {
		r.Observe(action, result)
	}
}

// nsgStatus is the NSG check's part of the Cluster status.
type nsgStatus struct {
	check   arov1alpha1.CheckStatus
	subnets []arov1alpha1.SubnetStatus
	// read holds the subnets ARM answered for in this pass; a subnet that
	// could not be read keeps its last record but is not judged on it.
	read       map[string]bool
	associated operatorv1.OperatorCondition
	suppressed *operatorv1.OperatorCondition
}

// summarise sets the conditions from the subnets' records.
func (s *nsgStatus) summarise(errs []string, now time.Time) {
	var drifted []string
	for _, sn := range s.subnets {
		if s.read[sn.ID] && !strings.EqualFold(sn.AttachedNSG, sn.ExpectedNSG) {
			drifted = append(drifted, fmt.Sprintf("%s is associated with %s", sn.ID, orNone(sn.AttachedNSG)))
		}
	}
	sort.Strings(drifted)
	switch {
	case len(drifted) > 0:
		s.associated = operatorv1.OperatorCondition{Type: arov1alpha1.NSGAssociated, Status: operatorv1.ConditionFalse,
			Reason: arov1alpha1.ReasonCheckFailed, Message: strings.Join(drifted, "\n")}
	case len(errs) > 0:
		s.associated = unknown(arov1alpha1.NSGAssociated, ReasonARMUnavailable, strings.Join(errs, "\n"))
	default:
		s.associated = operatorv1.OperatorCondition{Type: arov1alpha1.NSGAssociated, Status: operatorv1.ConditionTrue,
			Reason: arov1alpha1.ReasonCheckDone, Message: fmt.Sprintf("All %d cluster subnets are associated with the cluster's network security group", len(s.subnets))}
		s.check.LastSuccessTime = ptrTime(now)
	}
	c := suppression(s.subnets, now)
	s.suppressed = &c
}

// suppression is RemediationSuppressed as the subnets' records say at now.
func suppression(list []arov1alpha1.SubnetStatus, now time.Time) operatorv1.OperatorCondition {
	var suppressed []string
	reasons := map[string]bool{}
	for _, sn := range list {
		if sn.SuppressedUntil != nil && now.Before(sn.SuppressedUntil.Time) {
			suppressed = append(suppressed, fmt.Sprintf("%s until %s: %s", sn.ID, sn.SuppressedUntil.UTC().Format(time.RFC3339), sn.SuppressedMessage))
			reasons[sn.SuppressedReason] = true
		}
	}
	if len(suppressed) == 0 {
		return operatorv1.OperatorCondition{Type: arov1alpha1.RemediationSuppressed, Status: operatorv1.ConditionFalse,
			Reason: ReasonNotSuppressed, Message: "Remediation is running for every subnet"}
	}
	sort.Strings(suppressed)
	// A tug-of-war is the one to act on: it names another actor.
	reason := nsg.BudgetExhausted
	if reasons[nsg.TugOfWar] {
		reason = nsg.TugOfWar
	}
	return operatorv1.OperatorCondition{Type: arov1alpha1.RemediationSuppressed, Status: operatorv1.ConditionTrue,
		Reason: reason, Message: strings.Join(suppressed, "\n")}
}

func (r *NSGReconciler) write(ctx context.Context, cluster *arov1alpha1.Cluster, s nsgStatus, now time.Time) error {
	st := arov1alpha1.ClusterStatus{
		Checks:  []arov1alpha1.CheckStatus{s.check},
		Subnets: s.subnets,
	}
	// Empty only mid-pass before the first pass ever ended.
	if s.associated.Type != "" {
		st.Conditions = append(st.Conditions, condition(cluster.Status.Conditions, s.associated, now))
	}
	if s.suppressed != nil {
		st.Conditions = append(st.Conditions, condition(cluster.Status.Conditions, *s.suppressed, now))
	}
	return applyStatus(ctx, r.Client, NSGFieldManager, st)
}

func unknown(t, reason, msg string) operatorv1.OperatorCondition {
	return operatorv1.OperatorCondition{Type: t, Status: operatorv1.ConditionUnknown, Reason: reason, Message: msg}
}

// armReason is an ARM error in one line: the status and ARM's error code.
func armReason(err error) string {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		msg := fmt.Sprintf("%d %s", re.StatusCode, re.ErrorCode)
		if re.StatusCode == http.StatusNotFound {
			msg += " (the subnet does not exist)"
		}
		return msg
	}
	return strings.SplitN(err.Error(), "\n", 2)[0]
}

func attachedNSG(s armnetwork.Subnet) string {
	if s.Properties == nil || s.Properties.NetworkSecurityGroup == nil || s.Properties.NetworkSecurityGroup.ID == nil {
		return ""
	}
	return *s.Properties.NetworkSecurityGroup.ID
}

func findSubnet(list []arov1alpha1.SubnetStatus, id string) arov1alpha1.SubnetStatus {
	for _, s := range list {
		if strings.EqualFold(s.ID, id) {
			return s
		}
	}
	return arov1alpha1.SubnetStatus{}
}

func prevDrifted(s arov1alpha1.SubnetStatus) bool {
	return s.LastCheckTime != nil && !strings.EqualFold(s.AttachedNSG, s.ExpectedNSG)
}

func toRecord(s arov1alpha1.SubnetStatus) nsg.Record {
	rec := nsg.Record{SuppressedKind: s.SuppressedReason, SuppressedWhy: s.SuppressedMessage, LastFailed: s.LastRemediationFailed}
	for _, t := range s.Remediations {
		rec.Remediations = append(rec.Remediations, t.Time)
	}
	if s.SuppressedUntil != nil {
		rec.SuppressedUntil = &s.SuppressedUntil.Time
	}
	return rec
}

func fromRecord(s arov1alpha1.SubnetStatus, rec nsg.Record) arov1alpha1.SubnetStatus {
	s.Remediations = nil
	for _, t := range rec.Remediations {
		s.Remediations = append(s.Remediations, metav1.NewTime(t))
	}
	s.SuppressedUntil, s.SuppressedReason, s.SuppressedMessage = nil, rec.SuppressedKind, rec.SuppressedWhy
	s.LastRemediationFailed = rec.LastFailed
	if rec.SuppressedUntil != nil {
		s.SuppressedUntil = ptrTime(*rec.SuppressedUntil)
	}
	return s
}

func ptrTime(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t.Truncate(time.Second))
	return &mt
}

func orNone(id string) string {
	if id == "" {
		return "no network security group"
	}
	return id
}
