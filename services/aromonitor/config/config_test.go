package config

import (
	"testing"
	"time"

	arov1alpha1 "github.com/upshift-io/upshift/api/aro/v1alpha1"
	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"

	"github.com/upshift-io/upshift/services/aromonitor/nsg"
)

func TestCompute(t *testing.T) {
	urls := arov1alpha1.InternetCheckerSpec{URLs: []string{"https://arosvc.azurecr.io/", "https://management.azure.com/"}}
	for _, tc := range []struct {
		name      string
		mc        *amv1alpha1.MonitorConfigSpec
		flags     map[string]string
		wantMode  nsg.Mode
		wantCheck bool
		wantURLs  int
		wantIntvl time.Duration
	}{
		{"no MonitorConfig, no flags: ARO's defaults", nil, nil, nsg.Remediate, true, 2, 5 * time.Minute},
		{"checker flag off", nil, map[string]string{"aro.checker.enabled": "false"}, nsg.Remediate, false, 2, 5 * time.Minute},
		{"customer's own NSG: observe only", nil, map[string]string{"aro.azuresubnets.nsg.managed": "false"}, nsg.Observe, true, 2, 5 * time.Minute},
		{"subnet controller off", nil, map[string]string{"aro.azuresubnets.enabled": "false"}, nsg.Off, true, 2, 5 * time.Minute},
		{"our observe mode wins over ARO's managed flag", &amv1alpha1.MonitorConfigSpec{NSG: amv1alpha1.NSGConfig{Mode: amv1alpha1.NSGObserve}}, nil, nsg.Observe, true, 2, 5 * time.Minute},
		{"a partial MonitorConfig keeps the other defaults, extra URLs de-duplicated",
			&amv1alpha1.MonitorConfigSpec{Internet: amv1alpha1.InternetConfig{Interval: "1m", AdditionalURLs: []string{"https://management.azure.com/", "https://example.com/"}}},
			nil, nsg.Remediate, true, 3, time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Compute(tc.mc, arov1alpha1.ClusterSpec{InternetChecker: urls, OperatorFlags: tc.flags})
			if err != nil {
				t.Fatal(err)
			}
			if s.NSG.Mode != tc.wantMode || s.InternetChecks != tc.wantCheck || len(s.URLs) != tc.wantURLs || s.InternetInterval != tc.wantIntvl {
				t.Errorf("got mode %s checks %v urls %v interval %s", s.NSG.Mode, s.InternetChecks, s.URLs, s.InternetInterval)
			}
			if s.Thresholds.Failures != 3 || s.Thresholds.Successes != 2 || s.NSG.MaxPerHour != 3 || s.NSG.TugOfWar != 10*time.Minute {
				t.Errorf("defaults not filled: %+v", s)
			}
		})
	}
}

func TestComputeRefusesAnUnparsableDuration(t *testing.T) {
	_, err := Compute(&amv1alpha1.MonitorConfigSpec{NSG: amv1alpha1.NSGConfig{SuppressFor: "an hour"}}, arov1alpha1.ClusterSpec{})
	if err == nil || err.Error() != `MonitorConfig spec.nsg.suppressFor: "an hour" is not a duration` {
		t.Errorf("err %v", err)
	}
}
