package main

import (
	"strings"
	"testing"
)

func TestValidateNamesTheFlag(t *testing.T) {
	ok := func() *options {
		return &options{role: "master", credentials: DefaultCredentials}
	}
	if err := ok().validate(); err != nil {
		t.Fatalf("the chart's master flags: %v", err)
	}
	worker := ok()
	worker.role, worker.nodeName = "worker", "w-1"
	if err := worker.validate(); err != nil {
		t.Fatalf("the chart's worker flags: %v", err)
	}
	for _, tc := range []struct {
		mut  func(*options)
		want string
	}{
		{func(o *options) { o.role = "" }, "--role"},
		{func(o *options) { o.role = "infra" }, "--role"},
		{func(o *options) { o.credentials = "azure-credentials" }, "--credentials-secret"},
		{func(o *options) { o.credentials = "kube-system/" }, "--credentials-secret"},
		{func(o *options) { o.armEndpoint = "https://arm.example" }, "--aad-authority-host"},
		{func(o *options) { o.role = "worker" }, "--node-name"},
	} {
		o := ok()
		tc.mut(o)
		if err := o.validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error naming it", tc.want, err)
		}
	}
}

func TestCacheOptionsPerRole(t *testing.T) {
	master := cacheOptions(&options{role: "master", credentials: DefaultCredentials})
	worker := cacheOptions(&options{role: "worker", credentials: DefaultCredentials})
	// The worker watches the Cluster and the MonitorConfig only: no
	// Machines, MachineSets or Secrets, which its RBAC does not grant.
	if len(worker.ByObject) != 2 || len(master.ByObject) != 5 {
		t.Errorf("informers: worker %d, master %d; want 2 and 5", len(worker.ByObject), len(master.ByObject))
	}
	for obj, by := range master.ByObject {
		if by.Field == nil && by.Namespaces == nil {
			t.Errorf("%T is cached cluster-wide, unfiltered", obj)
		}
	}
}
