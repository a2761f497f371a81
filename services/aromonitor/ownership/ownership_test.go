package ownership

import (
	"strings"
	"testing"

	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"
)

func TestDecide(t *testing.T) {
	running := Deployment{Present: true, Replicas: 1, Ready: 1}
	starting := Deployment{Present: true, Replicas: 1}
	scaledDown := Deployment{Present: true}
	for _, tc := range []struct {
		name   string
		policy amv1alpha1.OwnershipPolicy
		check  amv1alpha1.CheckName
		aro    AROOperator
		want   amv1alpha1.Ownership
		says   string
	}{
		{"no ARO operator", amv1alpha1.OwnershipAuto, amv1alpha1.CheckNSG, AROOperator{},
			amv1alpha1.OwnershipReplace, "no deployment openshift-azure-operator/aro-operator-master"},
		{"master running: its checks are observed", amv1alpha1.OwnershipAuto, amv1alpha1.CheckCredentials, AROOperator{Master: running},
			amv1alpha1.OwnershipObserve, "aro-operator-master, 1 of 1 replicas ready"},
		{"not ready yet still runs: it will act once up", amv1alpha1.OwnershipAuto, amv1alpha1.CheckInternetMaster, AROOperator{Master: starting},
			amv1alpha1.OwnershipObserve, "0 of 1 replicas ready"},
		{"scaled to zero", amv1alpha1.OwnershipAuto, amv1alpha1.CheckNSG, AROOperator{Master: scaledDown, Worker: running},
			amv1alpha1.OwnershipReplace, "scaled to zero"},
		{"the workers' egress follows the worker deployment", amv1alpha1.OwnershipAuto, amv1alpha1.CheckInternetWorker, AROOperator{Master: running},
			amv1alpha1.OwnershipReplace, "no deployment openshift-azure-operator/aro-operator-worker"},
		{"worker deployment running", amv1alpha1.OwnershipAuto, amv1alpha1.CheckInternetWorker, AROOperator{Worker: running},
			amv1alpha1.OwnershipObserve, "aro-operator-worker"},
		{"declared the replacement", amv1alpha1.OwnershipAlwaysReplace, amv1alpha1.CheckNSG, AROOperator{Master: running, Worker: running},
			amv1alpha1.OwnershipReplace, "spec.ownership is Replace"},
		{"declared an observer", amv1alpha1.OwnershipAlwaysObserve, amv1alpha1.CheckNSG, AROOperator{},
			amv1alpha1.OwnershipObserve, "spec.ownership is Observe"},
		{"unset policy is Auto", "", amv1alpha1.CheckNSG, AROOperator{Master: running},
			amv1alpha1.OwnershipObserve, "ARO's operator runs this check"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.policy, tc.check, tc.aro)
			if d.Ownership != tc.want || !strings.Contains(d.Message, tc.says) {
				t.Errorf("got %s %q, want %s saying %q", d.Ownership, d.Message, tc.want, tc.says)
			}
		})
	}
}
