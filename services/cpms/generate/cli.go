package generate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/upshift-io/upshift/libs/scheme"
	"github.com/upshift-io/upshift/services/cpms/platform"
	"github.com/upshift-io/upshift/services/cpms/validate"
)

// PrintOptions configure Print (kubectl upshift cpms generate).
type PrintOptions struct {
	// Out receives the set; ErrOut a note on the set the cluster has.
	Out, ErrOut io.Writer
	// RESTConfig connects to the cluster (the kubeconfig flags).
	RESTConfig func() (*rest.Config, error)
	// Output is "yaml" (also when empty) or "json".
	Output string
}

// Print reads the Machines of openshift-machine-api and the Infrastructure
// `cluster`, and prints the set Set builds from them, for a person to review
// before it is applied (or before the controller's Generator creates it).
// When the cluster has a set already, ErrOut says whether it differs.
// Nothing is written to the cluster.
func Print(ctx context.Context, o PrintOptions) error {
	render, err := renderer(o.Output)
	if err != nil {
		return err
	}
	cfg, err := o.RESTConfig()
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		return err
	}
	var machines machinev1beta1.MachineList
	if err := c.List(ctx, &machines, client.InNamespace(validate.Namespace)); err != nil {
		return fmt.Errorf("listing the Machines of %s: %w", validate.Namespace, err)
	}
	infra := &configv1.Infrastructure{}
	switch err := c.Get(ctx, client.ObjectKey{Name: platform.InfrastructureName}, infra); {
	case apierrors.IsNotFound(err):
		// Not an OpenShift cluster as installed; the platform then comes
		// from the machines' provider specs.
		infra = nil
	case err != nil:
		return fmt.Errorf("reading the Infrastructure %s: %w", platform.InfrastructureName, err)
	}
	set, err := Set(machines.Items, infra)
	if err != nil {
		return fmt.Errorf("cannot generate a ControlPlaneMachineSet from the control-plane machines of %s: %w", validate.Namespace, err)
	}
	out, err := render(set)
	if err != nil {
		return err
	}
	if _, err := o.Out.Write(out); err != nil {
		return err
	}
	if note := existingNote(ctx, c, set); note != "" && o.ErrOut != nil {
		_, err = fmt.Fprintln(o.ErrOut, note)
	}
	return err
}

// existingNote says how the set in the cluster, if any, relates to the
// generated one. A set that cannot be read is not mentioned: the output
// stands on its own.
func existingNote(ctx context.Context, c client.Client, generated *machinev1.ControlPlaneMachineSet) string {
	existing := &machinev1.ControlPlaneMachineSet{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(generated), existing); err != nil {
		return ""
	}
	name := validate.Namespace + "/" + validate.Name
	switch {
	case existing.Spec.State == machinev1.ControlPlaneMachineSetStateActive:
		return fmt.Sprintf("note: %s exists and is Active; the generator leaves it alone", name)
	case existing.DeletionTimestamp != nil:
		return fmt.Sprintf("note: %s is being deleted", name)
	}
	if differs, reason := Differs(existing, generated); differs {
		return fmt.Sprintf("note: %s exists (Inactive) and differs: %s", name, reason)
	}
	return fmt.Sprintf("note: %s exists (Inactive) and says the same", name)
}

// renderer checks the output format before anything is read.
func renderer(format string) (func(*machinev1.ControlPlaneMachineSet) ([]byte, error), error) {
	switch format {
	case "", "yaml":
		return func(s *machinev1.ControlPlaneMachineSet) ([]byte, error) { return yaml.Marshal(s) }, nil
	case "json":
		return func(s *machinev1.ControlPlaneMachineSet) ([]byte, error) {
			b, err := json.MarshalIndent(s, "", "  ")
			return append(b, '\n'), err
		}, nil
	}
	return nil, errors.New(`invalid --output value "` + format + `": must be one of yaml, json`)
}
