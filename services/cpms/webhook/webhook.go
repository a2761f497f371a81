// Package webhook serves the ControlPlaneMachineSet validating admission
// webhook: the rules of package validate, for creates and updates, with the
// Machines of the set's namespace read from the apiserver when a rule needs
// them (a create, an activation).
package webhook

import (
	"context"
	"fmt"

	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/upshift-io/upshift/services/cpms/platform"
	"github.com/upshift-io/upshift/services/cpms/validate"
)

const (
	// Path is where the webhook is served (controller-runtime's convention
	// for a validating webhook of machine.openshift.io/v1 ControlPlaneMachineSet).
	Path = "/validate-machine-openshift-io-v1-controlplanemachineset"
	// ConfigurationName names the ValidatingWebhookConfiguration, and
	// WebhookName the one webhook in it.
	ConfigurationName = "cpms-controller"
	WebhookName       = "controlplanemachineset.cpms.upshift.io"
)

var groupKind = schema.GroupKind{Group: machinev1.GroupName, Kind: "ControlPlaneMachineSet"}

// Validator is the admission.Validator of ControlPlaneMachineSets.
type Validator struct {
	// Reader lists Machines. Use an uncached reader (the manager's API
	// reader): a create or an activation is rare, and must see every
	// machine there is.
	Reader client.Reader
	// Infrastructure reads the Infrastructure `cluster`, only for vSphere
	// and Nutanix sets (their failure domains are defined there). The
	// manager's cached client: the controller watches that object anyway,
	// and it changes about never.
	Infrastructure client.Reader
}

var _ admission.Validator[*machinev1.ControlPlaneMachineSet] = &Validator{}

// Register serves the webhook on srv at Path.
func Register(srv ctrlwebhook.Server, scheme *runtime.Scheme, reader, infrastructure client.Reader) {
	srv.Register(Path, admission.WithValidator[*machinev1.ControlPlaneMachineSet](scheme, &Validator{Reader: reader, Infrastructure: infrastructure}))
}

// ValidateCreate validates a new set.
func (v *Validator) ValidateCreate(ctx context.Context, cpms *machinev1.ControlPlaneMachineSet) (admission.Warnings, error) {
	return v.validate(ctx, nil, cpms)
}

// ValidateUpdate validates a change.
func (v *Validator) ValidateUpdate(ctx context.Context, old, cpms *machinev1.ControlPlaneMachineSet) (admission.Warnings, error) {
	return v.validate(ctx, old, cpms)
}

// ValidateDelete allows every delete: deleting the set releases the machines.
func (v *Validator) ValidateDelete(context.Context, *machinev1.ControlPlaneMachineSet) (admission.Warnings, error) {
	return nil, nil
}

func (v *Validator) validate(ctx context.Context, old, cpms *machinev1.ControlPlaneMachineSet) (admission.Warnings, error) {
	var machines []machinev1beta1.Machine
	if validate.NeedsMachines(old, cpms) {
		var list machinev1beta1.MachineList
		if err := v.Reader.List(ctx, &list, client.InNamespace(cpms.Namespace)); err != nil {
			return nil, apierrors.NewInternalError(fmt.Errorf("listing the machines of %s: %w", cpms.Namespace, err))
		}
		machines = list.Items
	}
	var infra *configv1.Infrastructure
	if validate.NeedsInfrastructure(old, cpms) {
		var obj configv1.Infrastructure
		err := v.Infrastructure.Get(ctx, client.ObjectKey{Name: platform.InfrastructureName}, &obj)
		switch {
		case err == nil:
			infra = &obj
		case apierrors.IsNotFound(err):
			// Left nil: the rules that need it say what is missing.
		default:
			return nil, apierrors.NewInternalError(fmt.Errorf("reading the Infrastructure %s: %w", platform.InfrastructureName, err))
		}
	}
	warnings, errs := validate.Set(old, cpms, machines, infra)
	if len(errs) > 0 {
		return warnings, apierrors.NewInvalid(groupKind, cpms.Name, errs)
	}
	return warnings, nil
}

// Configuration is the ValidatingWebhookConfiguration that sends creates and
// updates of ControlPlaneMachineSets to the service namespace/name on port
// 443 at Path, refusing them when the webhook cannot be reached (as the
// upstream operator's does). The caller (the chart) adds the CA bundle.
// Status writes do not go through it: the status subresource is not matched.
// Only sets in validate.Namespace are sent: the controller manages no other,
// and the webhook may read Machines only there (the chart's RBAC).
func Configuration(namespace, name string) *admissionregistrationv1.ValidatingWebhookConfiguration {
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: ConfigurationName},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: WebhookName,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{
				Service: &admissionregistrationv1.ServiceReference{Namespace: namespace, Name: name, Path: ptr.To(Path), Port: ptr.To(int32(443))},
			},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule: admissionregistrationv1.Rule{
					APIGroups: []string{machinev1.GroupName}, APIVersions: []string{"v1"},
					Resources: []string{"controlplanemachinesets"}, Scope: ptr.To(admissionregistrationv1.NamespacedScope),
				},
			}},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
				corev1.LabelMetadataName: validate.Namespace,
			}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To(int32(10)),
		}},
	}
}
