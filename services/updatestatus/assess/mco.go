package assess

import (
	appsv1 "k8s.io/api/apps/v1"
)

// Where the machine-config operator runs. The image of its container is what
// the machine-config ClusterOperator's operator-image version is compared
// with (Snapshot.MCOImage).
const (
	MCONamespace  = "openshift-machine-config-operator"
	MCODeployment = "machine-config-operator"
	MCOContainer  = "machine-config-operator"
)

// DeploymentMCOImage returns the image of the MCO container of the MCO
// Deployment, and false when the Deployment has no such container.
func DeploymentMCOImage(d *appsv1.Deployment) (string, bool) {
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == MCOContainer {
			return c.Image, true
		}
	}
	return "", false
}
