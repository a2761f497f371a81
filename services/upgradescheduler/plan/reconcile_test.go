package plan

import (
	"errors"
	"testing"
)

func TestHoldForLeases(t *testing.T) {
	failed := errors.New("expiring silence 0a1b: 503 Service Unavailable")
	for _, tc := range []struct {
		name     string
		action   *Action
		leaseErr error
		hold     bool
	}{
		{"no action", nil, failed, false},
		{"finalizer, leases in step", &Action{Kind: RemoveFinalizer}, nil, false},
		// A silence that failed to expire (or could not even be listed)
		// must not outlive the object: the finalizer waits.
		{"finalizer, leases failed", &Action{Kind: RemoveFinalizer}, failed, true},
		{"patch ClusterVersion, leases failed", &Action{Kind: PatchClusterVersion, Step: StepUpgradeCommenced}, failed, false},
		{"delete MachineSet, leases failed", &Action{Kind: DeleteMachineSet, Step: StepComputeCapacityRemoved}, failed, false},
		{"external checks, leases failed", &Action{Kind: CheckExternalDependencies}, failed, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := HoldForLeases(tc.action, tc.leaseErr); got != tc.hold {
				t.Fatalf("HoldForLeases = %v, want %v", got, tc.hold)
			}
		})
	}
}
