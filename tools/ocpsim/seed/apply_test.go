package seed

import (
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestOnlyACreateTheServerGaveUpOnIsSentAgain(t *testing.T) {
	mc := schema.GroupResource{Group: "machineconfiguration.openshift.io", Resource: "machineconfigs"}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"the create timed out in the API server", apierrors.NewTimeoutError("request did not complete within requested timeout - context deadline exceeded", 0), true},
		{"the server timed out", apierrors.NewServerTimeout(mc, "create", 1), true},
		{"the server shed it", apierrors.NewTooManyRequests("slow down", 1), true},
		{"invalid", apierrors.NewInvalid(schema.GroupKind{Group: mc.Group, Kind: "MachineConfig"}, "00-master", nil), false},
		{"exists", apierrors.NewAlreadyExists(mc, "00-master"), false},
		{"forbidden", apierrors.NewForbidden(mc, "00-master", errors.New("no")), false},
		{"not an API error", errors.New("connection refused"), false},
	} {
		if got := serverGaveUp(tc.err); got != tc.want {
			t.Errorf("%s: serverGaveUp = %v, want %v", tc.name, got, tc.want)
		}
	}
}
