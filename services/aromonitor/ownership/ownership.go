// Package ownership decides, check by check, whether aro-monitor replaces
// ARO's operator or observes beside it. Two controllers writing one
// condition type would flap it, and two NSG remediators would each take the
// other for a tug-of-war, so for each check exactly one of them acts: ARO's
// controller when its deployment runs, aro-monitor otherwise (or as the
// MonitorConfig's spec.ownership says). It does no I/O.
package ownership

import (
	"fmt"

	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"
)

// Namespace holds ARO operator's deployments.
const Namespace = "openshift-azure-operator"

// ARO operator's deployments: the master one runs every controller,
// the worker one only the internet checker for InternetReachableFromWorker.
const (
	MasterDeployment = "aro-operator-master"
	WorkerDeployment = "aro-operator-worker"
)

// Deployment is what is known of one of ARO operator's deployments.
type Deployment struct {
	// Present: the deployment exists.
	Present bool
	// Replicas is its spec.replicas (1 when unset, as the API defaults it);
	// Ready its status.readyReplicas.
	Replicas, Ready int32
}

// AROOperator is the state of ARO operator's two deployments.
type AROOperator struct {
	Master, Worker Deployment
}

// Decision is who acts for one check, and why.
type Decision struct {
	Ownership amv1alpha1.Ownership
	Message   string
}

// DeploymentFor is the ARO deployment whose controller runs check.
func DeploymentFor(check amv1alpha1.CheckName) string {
	if check == amv1alpha1.CheckInternetWorker {
		return WorkerDeployment
	}
	return MasterDeployment
}

// Decide says who acts for check under policy. A deployment counts as
// running while it exists and is not scaled to zero, ready or not: one that
// is starting or crash-looping will act as soon as it is up, and a second
// writer then would flap ARO's conditions.
func Decide(policy amv1alpha1.OwnershipPolicy, check amv1alpha1.CheckName, aro AROOperator) Decision {
	name := DeploymentFor(check)
	d := aro.Master
	if name == WorkerDeployment {
		d = aro.Worker
	}
	ref := Namespace + "/" + name
	switch policy {
	case amv1alpha1.OwnershipAlwaysReplace:
		return Decision{amv1alpha1.OwnershipReplace, "spec.ownership is Replace: aro-monitor writes ARO's conditions and remediates"}
	case amv1alpha1.OwnershipAlwaysObserve:
		return Decision{amv1alpha1.OwnershipObserve, "spec.ownership is Observe: aro-monitor reports on its MonitorConfig only"}
	}
	switch {
	case !d.Present:
		return Decision{amv1alpha1.OwnershipReplace, fmt.Sprintf("ARO's operator does not run this check (no deployment %s): aro-monitor replaces it", ref)}
	case d.Replicas == 0:
		return Decision{amv1alpha1.OwnershipReplace, fmt.Sprintf("ARO's operator does not run this check (deployment %s is scaled to zero): aro-monitor replaces it", ref)}
	}
	return Decision{amv1alpha1.OwnershipObserve, fmt.Sprintf("ARO's operator runs this check (deployment %s, %d of %d replicas ready): aro-monitor observes", ref, d.Ready, d.Replicas)}
}
