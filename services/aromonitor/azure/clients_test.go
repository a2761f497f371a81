package azure

import (
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"golang.org/x/time/rate"
)

func TestSetRequestsPerMinuteChangesEveryBudget(t *testing.T) {
	f := NewFactory(Options{})
	c := cloud.AzurePublic
	f.armOptions("SUB-1", c)
	f.SetRequestsPerMinute(600)
	f.armOptions("sub-2", c) // created after the change
	f.armOptions("sub-1", c) // the same subscription, any case
	if len(f.limiters) != 2 {
		t.Fatalf("limiters: %d, want one per subscription", len(f.limiters))
	}
	for sub, lim := range f.limiters {
		if lim.Limit() != rate.Limit(10) || lim.Burst() != 100 {
			t.Errorf("%s: %v/s burst %d, want 10/s burst 100", sub, lim.Limit(), lim.Burst())
		}
	}
	f.SetRequestsPerMinute(0) // no MonitorConfig value: unchanged
	if lim := f.limiters["sub-1"]; lim.Limit() != rate.Limit(10) {
		t.Errorf("a zero budget changed the limit to %v", lim.Limit())
	}
	f.SetRequestsPerMinute(6)
	if lim := f.limiters["sub-1"]; lim.Limit() != rate.Limit(0.1) || lim.Burst() != 1 {
		t.Errorf("6 per minute: %v/s burst %d", lim.Limit(), lim.Burst())
	}
}
