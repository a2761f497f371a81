package plan

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	"github.com/upshift-io/upshift/libs/mcostate"
)

// loadExamples reads the mutex operator's README examples (apiVersion
// changed), the same file the apiserver test applies.
func loadExamples(t *testing.T) (*mcfgv1.MachineConfigPool, *nodegatev1alpha1.MutexRule, *nodegatev1alpha1.MutexTarget, *nodegatev1alpha1.MutexRunConfig) {
	t.Helper()
	data, err := os.ReadFile("../validation/testdata/mutex-operator-examples.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var (
		pool   mcfgv1.MachineConfigPool
		rule   nodegatev1alpha1.MutexRule
		target nodegatev1alpha1.MutexTarget
		run    nodegatev1alpha1.MutexRunConfig
	)
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatal(err)
		}
		var into any
		switch u.GetKind() {
		case "MachineConfigPool":
			into = &pool
		case "MutexRule":
			into = &rule
		case "MutexTarget":
			into = &target
		case "MutexRunConfig":
			into = &run
		default:
			continue
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range []interface{ SetNamespace(string) }{&rule, &target, &run} {
		o.SetNamespace("node-upgrade-mutex-operator")
	}
	return &pool, &rule, &target, &run
}

// The examples behave as the mutex operator documents: target pools paused,
// for each node its job, then the node moves to the canary pool and is
// updated, then its clean-up job; at the end every pool is unpaused and the
// selectors are back (here: exactly as they were, not a hard-coded value).
func TestMutexOperatorExamplesBehave(t *testing.T) {
	canary, rule, target, run := loadExamples(t)
	w := newWorld(t, 3)
	canary.Spec.Configuration.Name = rendered("canary", w.version)
	w.pools["canary"] = canary
	origCanary := canary.Spec.NodeSelector.DeepCopy()
	w.rules = []nodegatev1alpha1.MutexRule{*rule}
	w.targets = []nodegatev1alpha1.MutexTarget{*target}
	run.UID, run.Generation = "uid-example", 1
	w.run = *run

	w.startUpdate("4.16.4")
	w.reconcile()
	if !w.pools["worker"].Spec.Paused {
		t.Fatal("the target pool is paused first")
	}
	w.renderRelease("4.16.4")
	w.finishControlPlane()
	w.reconcile()
	w.reconcile()
	order := w.run.Status.PlannedOrder
	if len(order) != 3 {
		t.Fatalf("planned order %v", order)
	}
	for _, node := range order {
		// Its job runs (off the node, with NODE_NAME) before the node moves.
		job := w.jobs[firstJob(t, w, node)]
		if !strings.HasPrefix(job.Name, "example-") || job.Namespace != "node-upgrade-mutex-operator" || envOf(job, EnvNodeName) != node {
			t.Fatalf("job %s/%s env %v", job.Namespace, job.Name, job.Spec.Template.Spec.Containers[0].Env)
		}
		if job.Spec.Template.Spec.Containers[0].Args[0] != "30" {
			t.Fatalf("the example's command is kept: %+v", job.Spec.Template.Spec.Containers[0])
		}
		if w.primary(w.nodes[node]) != "worker" {
			t.Fatalf("%s left the paused pool before its job finished", node)
		}
		w.setJob(ns2(job), batchv1.JobComplete)
		w.reconcile()
		if w.primary(w.nodes[node]) != "canary" {
			t.Fatalf("%s is not in the canary pool after its job", node)
		}
		w.mco()
		w.mco()
		if w.nodes[node].Annotations[mcostate.CurrentConfig] != rendered("canary", "4.16.4") {
			t.Fatalf("%s not updated in the canary", node)
		}
		w.reconcile()
		clean := w.jobs[firstJob(t, w, node)]
		if clean.Labels[HookLabel] != LegacyPostHook {
			t.Fatalf("clean-up job next, got %s", clean.Labels[HookLabel])
		}
		w.setJob(ns2(clean), batchv1.JobComplete)
		w.reconcile()
		if w.rec(node).Phase != nodegatev1alpha1.NodeCompleted {
			t.Fatalf("%s: %+v", node, w.rec(node))
		}
	}
	w.reconcile()
	if w.run.Status.Phase != nodegatev1alpha1.RunCompleted {
		t.Fatalf("phase %s", w.run.Status.Phase)
	}
	if w.pools["worker"].Spec.Paused || !sameSelector(w.pools["canary"].Spec.NodeSelector, origCanary) {
		t.Fatalf("restore: worker paused %v canary %+v", w.pools["worker"].Spec.Paused, w.pools["canary"].Spec.NodeSelector)
	}
}

func ns2(j *batchv1.Job) string { return j.Namespace + "/" + j.Name }
