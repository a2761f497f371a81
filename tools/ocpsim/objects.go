package ocpsim

import (
	"fmt"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func objectFor(kind string) (client.Object, error) {
	switch kind {
	case "clusteroperator":
		return &configv1.ClusterOperator{}, nil
	case "clusterversion":
		return &configv1.ClusterVersion{}, nil
	case "node":
		return &corev1.Node{}, nil
	case "machine":
		return &machinev1beta1.Machine{}, nil
	case "machineconfig":
		return &mcfgv1.MachineConfig{}, nil
	}
	return nil, fmt.Errorf("no fault applies to kind %q", kind)
}
