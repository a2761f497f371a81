package validation

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	arov1alpha1 "github.com/upshift-io/upshift/api/aro/v1alpha1"
	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"
	"github.com/upshift-io/upshift/libs/testenv"
	"github.com/upshift-io/upshift/services/aromonitor/config"
	"github.com/upshift-io/upshift/tools/ocpsim/simcluster"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	var err error
	cluster, err := simcluster.Start(ctx, simcluster.Options{})
	cancel()
	if err != nil {
		panic(err)
	}
	env = cluster.Env
	code := m.Run()
	_ = cluster.Stop()
	os.Exit(code)
}

func load(t *testing.T, file string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out
			}
			t.Fatal(err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

// TestAROClustersApplyUnchanged creates ARO's objects as written and reads
// them back: no field may be dropped or altered, but for the fields ARO's
// current schema no longer has (the pre-2022 features block and old
// genevaLogging fields), which its CRD prunes — as on a real cluster.
func TestAROClustersApplyUnchanged(t *testing.T) {
	ctx := context.Background()
	for _, want := range load(t, "testdata/aro-cluster.yaml") {
		t.Run(want.GetName(), func(t *testing.T) {
			obj := want.DeepCopy()
			if err := env.Client.Create(ctx, obj); err != nil {
				t.Fatalf("ARO's object refused: %v", err)
			}
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(want.GroupVersionKind())
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(want), got); err != nil {
				t.Fatal(err)
			}
			// Compared as JSON: YAML numbers decode as float64, the
			// apiserver's as int64.
			spec, _ := want.DeepCopy().Object["spec"].(map[string]any)
			delete(spec, "features")
			delete(spec, "genevaLogging")
			if _, kept := got.Object["spec"].(map[string]any)["features"]; kept {
				t.Error("spec.features kept: the installed CRD is not ARO's")
			}
			g, _ := json.Marshal(dropEmpty(got.Object["spec"]))
			w, _ := json.Marshal(dropEmpty(spec))
			if string(g) != string(w) {
				t.Errorf("spec changed on the way through the apiserver:\n got  %v\n want %v", got.Object["spec"], want.Object["spec"])
			}
		})
	}
}

// dropEmpty removes empty strings, lists and objects, which the typed
// client-side would omit anyway; every value that carries meaning stays.
func dropEmpty(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if e = dropEmpty(e); e != nil {
				out[k] = e
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case []any:
		if len(x) == 0 {
			return nil
		}
		return x
	case string:
		if x == "" {
			return nil
		}
	}
	return v
}

// TestAROStatusAccepted writes the status ARO's checkers write, reasons with
// spaces included, and reads it back; then shows the schema is ARO's: a
// status field ARO does not have (aro-monitor kept its state in such fields
// once) is pruned, so nothing of aro-monitor's may live there.
func TestAROStatusAccepted(t *testing.T) {
	ctx := context.Background()
	c := &arov1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "status-test"}}
	if err := env.Client.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	c.Status = arov1alpha1.ClusterStatus{
		OperatorVersion: "6f0b1e2",
		Conditions: []operatorv1.OperatorCondition{
			{Type: arov1alpha1.InternetReachableFromMaster, Status: operatorv1.ConditionTrue, Reason: "CheckDone", Message: "Outgoing connection successful", LastTransitionTime: now},
			{Type: arov1alpha1.ServicePrincipalValid, Status: operatorv1.ConditionFalse, Reason: "Service Principal invalid", Message: "AADSTS7000222: expired", LastTransitionTime: now},
			{Type: "MachineValid", Status: operatorv1.ConditionTrue, Reason: "CheckDone", LastTransitionTime: now},
		},
		RedHatKeysPresent: []string{"registry.redhat.io", "cloud.openshift.com"},
	}
	if err := env.Client.Status().Update(ctx, c); err != nil {
		t.Fatalf("status refused: %v", err)
	}
	got := &arov1alpha1.Cluster{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(c), got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Status, c.Status) {
		t.Errorf("status read back %+v\n want %+v", got.Status, c.Status)
	}

	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(arov1alpha1.GroupVersion.WithKind("Cluster"))
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(c), u); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedSlice(u.Object, []any{map[string]any{"name": "master", "consecutiveFailures": int64(2)}}, "status", "vantagePoints"); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Status().Update(ctx, u); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(c), u); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(u.Object, "status", "vantagePoints"); found {
		t.Error("a status field ARO's schema does not have was kept: the installed CRD is not ARO's")
	}
}

// TestMonitorConfigDefaults: an empty MonitorConfig gets, from the CRD, the
// same settings aro-monitor uses when there is none.
func TestMonitorConfigDefaults(t *testing.T) {
	ctx := context.Background()
	mc := &amv1alpha1.MonitorConfig{ObjectMeta: metav1.ObjectMeta{Name: amv1alpha1.SingletonName}}
	if err := env.Client.Create(ctx, mc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, mc) })
	if !reflect.DeepEqual(mc.Spec, config.Defaults()) {
		t.Errorf("CRD defaults %+v\n code defaults %+v", mc.Spec, config.Defaults())
	}
}

func TestMonitorConfigRefusals(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, want string
		obj        *amv1alpha1.MonitorConfig
	}{
		{"another name", "metadata.name must be cluster", &amv1alpha1.MonitorConfig{ObjectMeta: metav1.ObjectMeta{Name: "mine"}}},
		{"interval not a duration", "spec.internet.interval must be a duration between 5s and 24h",
			withSpec(func(s *amv1alpha1.MonitorConfigSpec) { s.Internet.Interval = "5 minutes" })},
		{"interval too short", "spec.internet.interval must be a duration between 5s and 24h",
			withSpec(func(s *amv1alpha1.MonitorConfigSpec) { s.Internet.Interval = "1s" })},
		{"timeout not shorter than the interval", "spec.internet.timeout must be shorter than spec.internet.interval",
			withSpec(func(s *amv1alpha1.MonitorConfigSpec) { s.Internet.Interval = "1m"; s.Internet.Timeout = "2m" })},
		{"unknown NSG mode", `spec.nsg.mode: Unsupported value: "Fix"`,
			withSpec(func(s *amv1alpha1.MonitorConfigSpec) { s.NSG.Mode = "Fix" })},
		{"negative budget", "spec.nsg.maxRemediationsPerHour in body should be greater than or equal to 1",
			withSpec(func(s *amv1alpha1.MonitorConfigSpec) { s.NSG.MaxRemediationsPerHour = -1 })},
		{"non-http URL", "spec.internet.additionalURLs must be http:// or https:// URLs",
			withSpec(func(s *amv1alpha1.MonitorConfigSpec) { s.Internet.AdditionalURLs = []string{"ftp://x/"} })},
		{"suppression too long", "spec.nsg.suppressFor must be a duration between 1m and 168h",
			withSpec(func(s *amv1alpha1.MonitorConfigSpec) { s.NSG.SuppressFor = "400h" })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := env.Client.Create(ctx, tc.obj)
			if err == nil {
				_ = env.Client.Delete(ctx, tc.obj)
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("refused with %q, want it to say %q", err, tc.want)
			}
		})
	}
}

func withSpec(f func(*amv1alpha1.MonitorConfigSpec)) *amv1alpha1.MonitorConfig {
	mc := &amv1alpha1.MonitorConfig{ObjectMeta: metav1.ObjectMeta{Name: amv1alpha1.SingletonName}, Spec: config.Defaults()}
	f(&mc.Spec)
	return mc
}
