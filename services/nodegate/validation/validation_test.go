package validation

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	"github.com/upshift-io/upshift/libs/testenv"
	"github.com/upshift-io/upshift/services/nodegate/plan"
	"github.com/upshift-io/upshift/tools/ocpsim/simcluster"
)

const exampleNS = "node-upgrade-mutex-operator"

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

func examples(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile("testdata/mutex-operator-examples.yaml")
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

func namespace(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatal(err)
	}
}

// contains: every value set in want is in got, unchanged (got may hold more:
// defaults).
func contains(got, want any, path string) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{path + ": missing or not an object"}
		}
		var diffs []string
		for k, v := range w {
			diffs = append(diffs, contains(g[k], v, path+"."+k)...)
		}
		return diffs
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{path + ": list differs"}
		}
		var diffs []string
		for i := range w {
			diffs = append(diffs, contains(g[i], w[i], path+"[]")...)
		}
		return diffs
	default:
		if !reflect.DeepEqual(got, want) {
			return []string{fmt.Sprintf("%s: got %v, want %v", path, got, want)}
		}
	}
	return nil
}

// The mutex operator's examples apply with only apiVersion changed, keep
// every field they set (nothing is pruned), and get the documented defaults.
func TestMutexOperatorExamplesApply(t *testing.T) {
	ctx := context.Background()
	namespace(t, ctx, exampleNS)
	for _, u := range examples(t) {
		sent := u.DeepCopy()
		if u.GetKind() != "MachineConfigPool" {
			u.SetNamespace(exampleNS)
		}
		if err := env.Client.Create(ctx, u); err != nil {
			t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
		}
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(u.GroupVersionKind())
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(u), got); err != nil {
			t.Fatal(err)
		}
		if d := contains(got.Object["spec"], sent.Object["spec"], u.GetKind()+".spec"); len(d) > 0 {
			t.Errorf("fields lost or changed by the apiserver:\n%s", strings.Join(d, "\n"))
		}
	}
	rule := &nodegatev1alpha1.MutexRule{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: exampleNS, Name: "k8s-example"}, rule); err != nil {
		t.Fatal(err)
	}
	c := rule.Spec.JobSpec.Template.Spec.Containers[0]
	if c.Image != "ubi9/toolbox" || c.Command[0] != "sleep" || c.Args[0] != "30" || rule.Spec.JobSpec.Template.Name != "mutex" {
		t.Fatalf("jobSpec read back: %+v", rule.Spec.JobSpec)
	}
	run := &nodegatev1alpha1.MutexRunConfig{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: exampleNS, Name: "example"}, run); err != nil {
		t.Fatal(err)
	}
	if run.Spec.MaxUnavailable == nil || run.Spec.MaxUnavailable.IntValue() != 1 || run.Spec.Canary.Name != "canary" || run.Spec.Paused {
		t.Fatalf("run defaults: %+v", run.Spec)
	}

	// The Jobs node-gate builds from the example are accepted by the Job API
	// and carry node-gate's environment after the user's.
	for _, stage := range []nodegatev1alpha1.HookStage{nodegatev1alpha1.StagePre, nodegatev1alpha1.StagePost} {
		spec := rule.Spec.JobSpec
		if stage == nodegatev1alpha1.StagePost {
			spec = rule.Spec.CleanUpJobSpec
		}
		job := plan.BuildJob(nodegatev1alpha1.Hook{Name: "job", JobSpec: *spec, Placement: nodegatev1alpha1.PlacementOffNode}, rule, stage,
			plan.JobParams{Node: "worker-0", Pool: "worker", TargetConfig: "rendered-canary-1", TargetVersion: "4.16.4", RunID: "r1", RunKey: "k", Attempt: 1,
				Owner: &metav1.OwnerReference{APIVersion: "nodegate.upshift.io/v1alpha1", Kind: "MutexRunConfig", Name: run.Name, UID: run.UID}})
		if err := env.Client.Create(ctx, job); err != nil {
			t.Fatalf("%s hook Job rejected: %v", stage, err)
		}
		got := &batchv1.Job{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(job), got); err != nil {
			t.Fatal(err)
		}
		env := got.Spec.Template.Spec.Containers[0].Env
		if len(env) != 6 || env[0].Name != plan.EnvNodeName || env[0].Value != "worker-0" ||
			env[1].Name != plan.EnvMutexRule || env[1].Value != rule.Name {
			t.Fatalf("env %+v", env)
		}
		if len(got.OwnerReferences) != 1 || got.OwnerReferences[0].UID != run.UID {
			t.Fatalf("owner %+v", got.OwnerReferences)
		}
	}
	// An identical second create (a restart before the status write) is
	// refused as AlreadyExists: the hook does not run twice.
	job := plan.BuildJob(nodegatev1alpha1.Hook{Name: "job", JobSpec: *rule.Spec.JobSpec}, rule, nodegatev1alpha1.StagePre,
		plan.JobParams{Node: "worker-0", RunID: "r1", Attempt: 1})
	if err := env.Client.Create(ctx, job); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("second create: %v", err)
	}
}

func set(path string, value any) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) {
		fields := strings.Split(path, ".")
		if value == nil {
			unstructured.RemoveNestedField(u.Object, fields...)
			return
		}
		if err := unstructured.SetNestedField(u.Object, value, fields...); err != nil {
			panic(err)
		}
	}
}

func hook(h map[string]any) map[string]any {
	if _, ok := h["jobSpec"]; !ok {
		h["jobSpec"] = map[string]any{"template": map[string]any{"spec": map[string]any{
			"restartPolicy": "Never", "containers": []any{map[string]any{"name": "c", "image": "i"}}}}}
	}
	return h
}

func TestRejectsInvalidObjects(t *testing.T) {
	ctx := context.Background()
	namespace(t, ctx, "invalid")
	byKind := map[string]*unstructured.Unstructured{}
	for _, u := range examples(t) {
		byKind[u.GetKind()] = u
	}
	cases := []struct {
		name, kind string
		mutate     func(*unstructured.Unstructured)
		want       string
	}{
		{"jobName not a DNS label", "MutexRule", set("spec.jobName", "Bad_Name"),
			`spec.jobName: Invalid value: "Bad_Name": spec.jobName must be a DNS label`},
		{"jobName too long", "MutexRule", set("spec.jobName", strings.Repeat("a", 31)), "spec.jobName: Too long"},
		{"jobName missing", "MutexRule", set("spec.jobName", nil), "spec.jobName: Required value"},
		{"jobNamespace not a name", "MutexRule", set("spec.jobNamespace", "Not OK"),
			"spec.jobNamespace must be a namespace name"},
		{"type unknown", "MutexRule", set("spec.type", "ansible"), `spec.type: Unsupported value: "ansible": supported values: "kubernetes"`},
		{"nothing to run", "MutexRule", func(u *unstructured.Unstructured) {
			set("spec.jobSpec", nil)(u)
			set("spec.cleanUpJobSpec", nil)(u)
		}, "spec must set at least one of jobSpec, cleanUpJobSpec, preHooks or postHooks"},
		{"jobSpec without template", "MutexRule", set("spec.jobSpec.template", nil), "spec.jobSpec.template: Required value"},
		{"jobSpec wrong type", "MutexRule", set("spec.jobSpec.backoffLimit", "many"), `spec.jobSpec.backoffLimit: Invalid value: "string": spec.jobSpec.backoffLimit in body must be of type integer`},
		{"hook failurePolicy unknown", "MutexRule", set("spec.preHooks", []any{hook(map[string]any{"name": "a", "failurePolicy": "Retry"})}),
			`spec.preHooks[0].failurePolicy: Unsupported value: "Retry": supported values: "Pause", "Ignore", "Abort"`},
		{"hook placement unknown", "MutexRule", set("spec.preHooks", []any{hook(map[string]any{"name": "a", "placement": "Near"})}),
			`spec.preHooks[0].placement: Unsupported value: "Near"`},
		{"hook timeout out of bounds", "MutexRule", set("spec.postHooks", []any{hook(map[string]any{"name": "a", "timeout": "0s"})}),
			`spec.postHooks[0].timeout: Invalid value: "0s": timeout must be between 1s and 168h`},
		{"hook retries too many", "MutexRule", set("spec.preHooks", []any{hook(map[string]any{"name": "a", "retries": int64(11)})}),
			"spec.preHooks[0].retries: Invalid value: 11: spec.preHooks[0].retries in body should be less than or equal to 10"},
		{"hook name reserved", "MutexRule", set("spec.preHooks", []any{hook(map[string]any{"name": "job"})}),
			"spec.preHooks[0]: Invalid value: name must not be job or cleanup"},
		{"hook name bad", "MutexRule", set("spec.preHooks", []any{hook(map[string]any{"name": "A_B"})}),
			"name must be a DNS label of at most 12 characters"},
		{"hook name shared by stages", "MutexRule", func(u *unstructured.Unstructured) {
			set("spec.preHooks", []any{hook(map[string]any{"name": "x"})})(u)
			set("spec.postHooks", []any{hook(map[string]any{"name": "x"})})(u)
		}, "spec.preHooks and spec.postHooks must not share a hook name"},
		{"lookahead too far", "MutexRule", set("spec.lookahead", int64(101)),
			"spec.lookahead: Invalid value: 101: spec.lookahead in body should be less than or equal to 100"},
		{"lookahead negative", "MutexRule", set("spec.lookahead", int64(-1)),
			"spec.lookahead: Invalid value: -1: spec.lookahead in body should be greater than or equal to 0"},
		{"maxHookAge too short", "MutexRule", set("spec.maxHookAge", "30s"),
			`spec.maxHookAge: Invalid value: "30s": maxHookAge must be between 1m and 168h`},
		{"holdUntil unknown", "MutexRunConfig", set("spec.holdUntil", "Never"),
			`spec.holdUntil: Unsupported value: "Never": supported values: "Rendered", "ControlPlaneUpdated"`},
		{"no pools", "MutexTarget", set("spec.machineConfigPools", []any{}), "spec.machineConfigPools: Invalid value: 0: spec.machineConfigPools in body should have at least 1 items"},
		{"master pool", "MutexTarget", set("spec.machineConfigPools", []any{"worker", "master"}), "spec.machineConfigPools must not name master"},
		{"pool name invalid", "MutexTarget", set("spec.machineConfigPools", []any{"Worker Pool"}), "spec.machineConfigPools must hold MachineConfigPool names"},
		{"no targets", "MutexRunConfig", set("spec.mutexTargets", nil), "spec.mutexTargets: Required value"},
		{"canary is worker", "MutexRunConfig", set("spec.canary.name", "worker"), "spec.canary.name must name a custom pool, not master or worker"},
		{"maxUnavailable zero", "MutexRunConfig", set("spec.maxUnavailable", int64(0)),
			"spec.maxUnavailable must be a number of at least 1 or a percentage between 1% and 100%"},
		{"maxUnavailable bad percent", "MutexRunConfig", set("spec.maxUnavailable", "150%"),
			"spec.maxUnavailable must be a number of at least 1 or a percentage between 1% and 100%"},
		{"window start", "MutexRunConfig", set("spec.maintenanceWindows", []any{map[string]any{"start": "25:00", "end": "02:00"}}),
			`spec.maintenanceWindows[0].start: Invalid value: "25:00": start must be HH:MM on a 24-hour clock`},
		{"window day", "MutexRunConfig", set("spec.maintenanceWindows", []any{map[string]any{"start": "22:00", "end": "02:00", "days": []any{"Someday"}}}),
			`spec.maintenanceWindows[0].days[0]: Unsupported value: "Someday"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := byKind[tc.kind].DeepCopy()
			u.SetNamespace("invalid")
			u.SetName("x-" + strings.ToLower(strings.ReplaceAll(tc.name, " ", "-")))
			tc.mutate(u)
			err := env.Client.Create(ctx, u)
			if err == nil {
				t.Fatalf("accepted: %v", u.Object["spec"])
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error\n got %v\nwant ...%s...", err, tc.want)
			}
		})
	}
	// Valid additive fields are accepted, with defaults.
	u := byKind["MutexRule"].DeepCopy()
	u.SetNamespace("invalid")
	u.SetName("valid-hooks")
	set("spec.preHooks", []any{hook(map[string]any{"name": "fence", "timeout": "30m", "retries": int64(2)})})(u)
	set("spec.postHooks", []any{hook(map[string]any{"name": "verify", "placement": "OnNode", "failurePolicy": "Ignore"})})(u)
	if err := env.Client.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	rule := &nodegatev1alpha1.MutexRule{}
	if err := env.Client.Get(ctx, types.NamespacedName{Namespace: "invalid", Name: "valid-hooks"}, rule); err != nil {
		t.Fatal(err)
	}
	if h := rule.Spec.PreHooks[0]; h.FailurePolicy != nodegatev1alpha1.FailurePause || h.Placement != nodegatev1alpha1.PlacementAnywhere || h.Timeout.Duration != 30*time.Minute {
		t.Fatalf("hook defaults: %+v", h)
	}
	r := byKind["MutexRunConfig"].DeepCopy()
	r.SetNamespace("invalid")
	r.SetName("valid-run")
	set("spec.maxUnavailable", "25%")(r)
	set("spec.paused", true)(r)
	set("spec.healthGate", map[string]any{"ignoredAlertNames": []any{"Watchdog"}})(r)
	set("spec.maintenanceWindows", []any{map[string]any{"start": "22:00", "end": "02:00", "timeZone": "Europe/Berlin", "days": []any{"Saturday"}}})(r)
	if err := env.Client.Create(ctx, r); err != nil {
		t.Fatal(err)
	}
}

// The mutex operator's printer columns, as its CRDs (bundle 0.2.66) declare
// them: name and path, in order. They come first, under those names, in
// ours; Upshift's columns follow.
var mutexOperatorColumns = map[string][]string{
	"mutexrules":      {"Job Name=.spec.jobName", "Job Namespace=.spec.jobNamespace"},
	"mutexrunconfigs": {"Canary=.spec.canary.name", "Rules=.spec.mutexRules", "Targets=.spec.mutexTargets"},
	"mutextargets":    {"Machine Config Pools=.spec.machineConfigPools", "Nodes=.status.nodes"},
}

// printerColumns are the CRD's printer columns as "name=path", in order.
func printerColumns(t *testing.T, ctx context.Context, plural string) []string {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: plural + ".nodegate.upshift.io"}, crd); err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, c := range crd.Spec.Versions[0].AdditionalPrinterColumns {
		cols = append(cols, c.Name+"="+c.JSONPath)
	}
	return cols
}

// The status subresource and printer columns are served: the mutex
// operator's first, then Upshift's.
func TestStatusAndColumns(t *testing.T) {
	ctx := context.Background()
	for plural, want := range mutexOperatorColumns {
		if cols := printerColumns(t, ctx, plural); len(cols) < len(want) || !reflect.DeepEqual(cols[:len(want)], want) {
			t.Errorf("%s: printer columns %v, want the mutex operator's %v first", plural, cols, want)
		}
	}
	cols := printerColumns(t, ctx, "mutexrunconfigs")
	for _, want := range []string{"Phase=.status.phase", "Current=.status.currentNodes", "Progress=.status.progress"} {
		if !strings.Contains(strings.Join(cols, " "), want) {
			t.Errorf("printer column %s missing from %v", want, cols)
		}
	}
	namespace(t, ctx, "status")
	run := &nodegatev1alpha1.MutexRunConfig{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "status"},
		Spec: nodegatev1alpha1.MutexRunConfigSpec{MutexTargets: []nodegatev1alpha1.ObjectReference{{Name: "t"}}}}
	if err := env.Client.Create(ctx, run); err != nil {
		t.Fatal(err)
	}
	paused := false
	run.Status = nodegatev1alpha1.MutexRunConfigStatus{ObservedGeneration: 1, Phase: nodegatev1alpha1.RunProgressing, Progress: "1/3",
		CurrentNodes: []string{"w1"}, PlannedOrder: []string{"w0", "w1", "w2"},
		Pools: []nodegatev1alpha1.PoolRecord{{Name: "worker", OriginalPaused: &paused, GatePool: "worker-gate"}},
		Nodes: []nodegatev1alpha1.NodeRecord{{Name: "w1", Pool: "worker", Phase: nodegatev1alpha1.NodeReleased,
			Hooks: []nodegatev1alpha1.HookRecord{{Rule: "ns/r", Name: "job", Stage: nodegatev1alpha1.StagePre, Phase: nodegatev1alpha1.HookSucceeded, Attempts: 1}}}}}
	if err := env.Client.Status().Update(ctx, run); err != nil {
		t.Fatal(err)
	}
	got := &nodegatev1alpha1.MutexRunConfig{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(run), got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Status, run.Status) {
		t.Fatalf("status round trip:\n got %+v\nwant %+v", got.Status, run.Status)
	}
}
