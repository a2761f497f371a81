package faults

import "testing"

func TestParseRequest(t *testing.T) {
	good := map[string]Request{
		"node/worker-2=NeverReady":                 {Kind: "node", Name: "worker-2", Fault: NeverReady},
		"ClusterOperator/etcd=Degraded":            {Kind: "clusteroperator", Name: "etcd", Fault: OperatorDegraded},
		"machine/m-1=ProvisionFailed":              {Kind: "machine", Namespace: "openshift-machine-api", Name: "m-1", Fault: ProvisionFailed},
		"machine/other/m-1=ProvisionFailed":        {Kind: "machine", Namespace: "other", Name: "m-1", Fault: ProvisionFailed},
		"machineconfig/99-worker-x=Unreconcilable": {Kind: "machineconfig", Name: "99-worker-x", Fault: Unreconcilable},
		"clusterversion/version=Failing":           {Kind: "clusterversion", Name: "version", Fault: VersionFailing},
		"clusterversion/version=AdminAckRequired":  {Kind: "clusterversion", Name: "version", Fault: AdminAckRequired},
		"clusteroperator/dns=NotUpgradeable":       {Kind: "clusteroperator", Name: "dns", Fault: OperatorNotUpgradeable},
	}
	for in, want := range good {
		got, err := ParseRequest(in)
		if err != nil || got != want {
			t.Errorf("ParseRequest(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "node", "node/=NeverReady", "node/a=", "node/a=Bogus", "node/a=Degraded", "node/a=NotUpgradeable", "clusteroperator/a=AdminAckRequired", "worker-2=NeverReady"} {
		if _, err := ParseRequest(in); err == nil {
			t.Errorf("ParseRequest(%q) succeeded", in)
		}
	}
}

func TestHasAndAdd(t *testing.T) {
	a := map[string]string{Annotation: "DrainStuck, NeverReady"}
	if !Has(a, NeverReady) || !Has(a, DrainStuck) || Has(a, Unreconcilable) {
		t.Fatalf("Has wrong for %v", a)
	}
	if Has(nil, NeverReady) {
		t.Fatal("Has(nil)")
	}
	if got := Add("", NeverReady); got != "NeverReady" {
		t.Errorf("Add = %q", got)
	}
	if got := Add("NeverReady", NeverReady); got != "NeverReady" {
		t.Errorf("Add twice = %q", got)
	}
	if got := Add("NeverReady", DrainStuck); got != "NeverReady,DrainStuck" {
		t.Errorf("Add = %q", got)
	}
}
