package controller

import (
	"context"
	"fmt"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	arov1alpha1 "github.com/upshift-io/upshift/api/aro/v1alpha1"
	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"
	"github.com/upshift-io/upshift/libs/apply"

	"github.com/upshift-io/upshift/services/aromonitor/clusterstatus"
	"github.com/upshift-io/upshift/services/aromonitor/config"
	"github.com/upshift-io/upshift/services/aromonitor/ownership"
)

// monitorStatus is the apply configuration of the MonitorConfig's status,
// where aro-monitor keeps its record. It sends the object's identity and
// the status fields set in Status, and nothing of the spec, so that each
// check's manager owns exactly the status fields it writes.
type monitorStatus struct {
	metav1ac.TypeMetaApplyConfiguration    `json:",inline"`
	*metav1ac.ObjectMetaApplyConfiguration `json:"metadata,omitempty"`
	Status                                 *amv1alpha1.MonitorConfigStatus `json:"status,omitempty"`
}

// IsApplyConfiguration marks monitorStatus as an apply configuration.
func (*monitorStatus) IsApplyConfiguration() {}

// applyStatus writes the fields set in st — and only those — to the
// MonitorConfig's status under the field manager (libs/apply forces
// ownership: these fields are this check's alone). The client decodes the
// server's answer, the whole status, into the apply configuration: it gets
// a copy, so that st's slices still hold this check's fields afterwards.
func applyStatus(ctx context.Context, c client.Client, manager string, st amv1alpha1.MonitorConfigStatus) error {
	ac := &monitorStatus{
		TypeMetaApplyConfiguration:   *metav1ac.TypeMeta().WithAPIVersion(amv1alpha1.GroupVersion.String()).WithKind("MonitorConfig"),
		ObjectMetaApplyConfiguration: metav1ac.ObjectMeta().WithName(amv1alpha1.SingletonName),
		Status:                       st.DeepCopy(),
	}
	_, err := apply.Status(ctx, c, ac, manager)
	return err
}

// snapshot is what every check reads first.
type snapshot struct {
	cluster *arov1alpha1.Cluster
	// record is aro-monitor's status as read: the previous passes' state.
	record   amv1alpha1.MonitorConfigStatus
	settings config.Settings
	// configErr is a MonitorConfig that could not be used; the defaults run.
	configErr error
}

// load reads the Cluster and the MonitorConfig; nil when either is missing:
// nothing to check without a Cluster, and nowhere to keep the record
// without a MonitorConfig (ConfigReconciler creates it, and its creation
// wakes every check).
func load(ctx context.Context, c client.Client) (*snapshot, error) {
	cluster := &arov1alpha1.Cluster{}
	if err := c.Get(ctx, client.ObjectKey{Name: arov1alpha1.SingletonName}, cluster); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	mc := &amv1alpha1.MonitorConfig{}
	if err := c.Get(ctx, client.ObjectKey{Name: amv1alpha1.SingletonName}, mc); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	s := &snapshot{cluster: cluster, record: mc.Status}
	s.settings, s.configErr = config.Compute(&mc.Spec, cluster.Spec)
	if s.configErr != nil {
		s.settings, _ = config.Compute(nil, cluster.Spec)
	}
	return s, nil
}

// decideOwnership says who acts for check: it reads ARO operator's
// deployments from the cache (the master role watches them).
func decideOwnership(ctx context.Context, c client.Client, policy amv1alpha1.OwnershipPolicy, check amv1alpha1.CheckName) (ownership.Decision, error) {
	var aro ownership.AROOperator
	for name, d := range map[string]*ownership.Deployment{ownership.MasterDeployment: &aro.Master, ownership.WorkerDeployment: &aro.Worker} {
		dep := &appsv1.Deployment{}
		switch err := c.Get(ctx, client.ObjectKey{Namespace: ownership.Namespace, Name: name}, dep); {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return ownership.Decision{}, fmt.Errorf("reading deployment %s/%s: %w", ownership.Namespace, name, err)
		}
		d.Present, d.Replicas, d.Ready = true, 1, dep.Status.ReadyReplicas
		if dep.Spec.Replicas != nil {
			d.Replicas = *dep.Spec.Replicas
		}
	}
	return ownership.Decide(policy, check, aro), nil
}

// withOwnership records the decision in the check's record.
func withOwnership(check amv1alpha1.CheckStatus, d ownership.Decision) amv1alpha1.CheckStatus {
	check.Ownership, check.OwnershipMessage = d.Ownership, d.Message
	return check
}

// setAROConditions writes conds, ARO's condition types for a check that
// aro-monitor replaces, into the Cluster's status.conditions the way ARO's
// own controllers do: read, change only those types (in place, or appended
// when new; a transition time moves only with the status), write back
// under the object's resourceVersion, and again on a conflict. ARO's CRD
// keeps the list atomic, so an apply would own — and remove — every other
// writer's conditions. The object is read live and unstructured, so neither
// a stale cache nor a status field these types do not know is written back.
// cached is the Cluster as the cache has it: when it already holds conds,
// nothing is read or written.
func setAROConditions(ctx context.Context, c client.Client, cached *arov1alpha1.Cluster, now time.Time, conds ...operatorv1.OperatorCondition) error {
	if _, changed := clusterstatus.Merge(cached.Status.Conditions, conds, now); !changed {
		return nil
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(arov1alpha1.GroupVersion.WithKind("Cluster"))
		// Unstructured reads bypass the manager's cache: this is live.
		if err := c.Get(ctx, client.ObjectKey{Name: arov1alpha1.SingletonName}, u); err != nil {
			return err
		}
		var st arov1alpha1.ClusterStatus
		if raw, ok := u.Object["status"].(map[string]any); ok {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &st); err != nil {
				return fmt.Errorf("reading the Cluster's conditions: %w", err)
			}
		}
		merged, changed := clusterstatus.Merge(st.Conditions, conds, now)
		if !changed {
			return nil
		}
		list := make([]any, 0, len(merged))
		for i := range merged {
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&merged[i])
			if err != nil {
				return err
			}
			list = append(list, m)
		}
		if err := unstructured.SetNestedSlice(u.Object, list, "status", "conditions"); err != nil {
			return err
		}
		return c.Status().Update(ctx, u)
	})
}

// aroConditions picks ARO's condition types out of a check's status.
func aroConditions(st amv1alpha1.MonitorConfigStatus, types ...string) []operatorv1.OperatorCondition {
	var out []operatorv1.OperatorCondition
	for _, t := range types {
		if c := clusterstatus.ConditionByType(st.Conditions, t); c != nil {
			out = append(out, *c)
		}
	}
	return out
}
