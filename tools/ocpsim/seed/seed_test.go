package seed

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/upshift-io/upshift/libs/mcostate"
	"github.com/upshift-io/upshift/tools/ocpsim/cvo"
	"github.com/upshift-io/upshift/tools/ocpsim/mco"
)

func TestBuild(t *testing.T) {
	o, err := Build(Topology{Version: "4.16.1", Masters: 3, Workers: 7, CustomPools: []CustomPool{{Name: "infra", Nodes: 2}},
		Workloads: []Workload{{Name: "web", Replicas: 2, PDBMaxUnavailable: "1"}}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(o.ClusterOperators) < 30 {
		t.Errorf("%d cluster operators", len(o.ClusterOperators))
	}
	for _, co := range o.ClusterOperators {
		if co.Annotations["include.release.openshift.io/self-managed-high-availability"] != "true" {
			t.Errorf("%s lacks the release include annotation", co.Name)
		}
	}
	cv := o.ClusterVersion
	if cv.Spec.Channel != "stable-4.16" || cv.Status.Desired.Version != "4.16.1" || len(cv.Status.AvailableUpdates) != 2 || cv.Status.History[0].Version != "4.16.1" {
		t.Errorf("cluster version wrong: %+v", cv.Status)
	}
	if len(o.Nodes) != 12 || len(o.Machines) != 12 {
		t.Fatalf("%d nodes, %d machines", len(o.Nodes), len(o.Machines))
	}
	byPool := mco.NodesByPool(o.Nodes, o.Pools)
	if len(byPool["master"]) != 3 || len(byPool["worker"]) != 7 || len(byPool["infra"]) != 2 {
		t.Errorf("pool membership: master %d worker %d infra %d", len(byPool["master"]), len(byPool["worker"]), len(byPool["infra"]))
	}
	zones := map[string]int{}
	for _, n := range byPool["worker"] {
		zones[n.Labels[mcostate.ZoneLabel]]++
	}
	if zones["us-east-1a"] != 3 || zones["us-east-1b"] != 2 || zones["us-east-1c"] != 2 {
		t.Errorf("workers per zone: %v", zones)
	}
	for _, p := range o.Pools {
		c := mco.PoolCondition(&p.Status, mcfgv1.MachineConfigPoolUpdated)
		if c == nil || c.Status != corev1.ConditionTrue || p.Status.MachineCount != int32(len(byPool[p.Name])) {
			t.Errorf("pool %s not Updated: %+v", p.Name, p.Status)
		}
		for _, n := range byPool[p.Name] {
			if !mco.IsUpdated(n, p.Spec.Configuration.Name) {
				t.Errorf("node %s not Done on %s", n.Name, p.Spec.Configuration.Name)
			}
		}
	}
	var worker, infra string
	for _, p := range o.Pools {
		switch p.Name {
		case "worker":
			worker = p.Spec.Configuration.Name
		case "infra":
			infra = p.Spec.Configuration.Name
		}
	}
	if !mco.SameContent(worker, infra) || worker == infra {
		t.Errorf("infra pool without own configs should render the worker content under its own name: %s %s", worker, infra)
	}
	masters := 0
	for _, m := range o.Machines {
		if m.Spec.ProviderID == nil || m.Status.NodeRef == nil || m.Status.NodeRef.Name != m.Name {
			t.Errorf("machine %s lacks providerID or nodeRef", m.Name)
		}
		if m.Labels["machine.openshift.io/cluster-api-machine-role"] == "master" {
			masters++
			if len(m.Spec.LifecycleHooks.PreDrain) != 1 || m.Spec.LifecycleHooks.PreDrain[0].Name != EtcdHookName {
				t.Errorf("master %s lacks the etcd hook", m.Name)
			}
		}
	}
	if masters != 3 || o.CPMS == nil || *o.CPMS.Spec.Replicas != 3 {
		t.Errorf("control plane: %d masters, cpms %+v", masters, o.CPMS)
	}
	if len(o.MachineSets) != 3+2 || len(o.Deployments) != 1 || len(o.PDBs) != 1 {
		t.Errorf("%d machinesets, %d deployments, %d pdbs", len(o.MachineSets), len(o.Deployments), len(o.PDBs))
	}
}

func TestValidateAndLoad(t *testing.T) {
	bad := map[string]Topology{
		"version":       {Version: "four", Masters: 3},
		"no masters":    {Masters: 0},
		"negative":      {Masters: 3, Workers: -1},
		"pool name":     {Masters: 3, CustomPools: []CustomPool{{Name: "worker"}}},
		"max":           {Masters: 3, WorkerMaxUnavailable: "x"},
		"both pdb":      {Masters: 3, Workloads: []Workload{{Name: "a", PDBMinAvailable: "1", PDBMaxUnavailable: "1"}}},
		"zone":          {Masters: 3, Zones: []string{"Bad_Zone"}},
		"percent > 100": {Masters: 3, WorkerMaxUnavailable: "150%"},
	}
	for name, tp := range bad {
		if err := tp.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "t.yaml")
	os.WriteFile(good, []byte("version: 4.17.3\nmasters: 3\nworkers: 100\nworkerMaxUnavailable: 10%\ncustomPools:\n- name: infra\n  nodes: 3\n"), 0o600)
	tp, err := Load(good)
	if err != nil || tp.Workers != 100 || tp.CustomPools[0].Name != "infra" || tp.WithDefaults().Channel != "stable-4.17" {
		t.Errorf("Load = %+v, %v", tp, err)
	}
	withGraph := filepath.Join(dir, "g.yaml")
	os.WriteFile(withGraph, []byte(`version: 4.16.1
masters: 1
releases:
- version: 4.16.2
  channels: [stable-4.16, fast-4.16]
  risks:
  - name: ARisk
    message: A is broken.
    url: https://example.com/a
    promql: group(cluster_version)
    promqlResult: NoMatch
`), 0o600)
	tp, err = Load(withGraph)
	if err != nil || len(tp.Releases) != 1 || tp.Releases[0].Risks[0].PromQLResult != cvo.PromQLNoMatch || tp.Releases[0].Channels[1] != "fast-4.16" || tp.Validate() != nil {
		t.Errorf("Load releases = %+v, %v", tp, err)
	}
	unknown := filepath.Join(dir, "u.yaml")
	os.WriteFile(unknown, []byte("masters: 3\nwrokers: 2\n"), 0o600)
	if _, err := Load(unknown); err == nil || !strings.Contains(err.Error(), "wrokers") {
		t.Errorf("unknown field accepted: %v", err)
	}
}

// TestMCOImage: the machine-config operator reports the image its Deployment
// runs, as on a real cluster, and each release image has its own MCO image.
func TestMCOImage(t *testing.T) {
	o, err := Build(Topology{Version: "4.16.1", Masters: 3, Workers: 2}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	want := cvo.MCOImage(cvo.ReleaseImage("4.16.1"))
	d := o.MCODeployment
	if d == nil || d.Namespace != cvo.MCONamespace || d.Name != cvo.MCODeployment {
		t.Fatalf("MCO Deployment = %+v", d)
	}
	var image string
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == cvo.MCOContainer {
			image = c.Image
		}
	}
	if image != want {
		t.Errorf("Deployment image %q, want %q", image, want)
	}
	for _, co := range o.ClusterOperators {
		var reported string
		for _, v := range co.Status.Versions {
			if v.Name == "operator-image" {
				reported = v.Version
			}
		}
		switch {
		case co.Name == cvo.MachineConfig && reported != want:
			t.Errorf("machine-config reports operator-image %q, want %q", reported, want)
		case co.Name != cvo.MachineConfig && reported != "":
			t.Errorf("%s reports an operator-image %q", co.Name, reported)
		}
	}
	if a, b := cvo.MCOImage(cvo.ReleaseImage("4.16.1")), cvo.MCOImage(cvo.ReleaseImage("4.16.2")); a == b {
		t.Errorf("two releases share the MCO image %s", a)
	}
	if a, b := cvo.MCOImage("quay.io/r@sha256:x86"), cvo.MCOImage("quay.io/r@sha256:multi"); a == b {
		t.Errorf("two images of one version share the MCO image %s", a)
	}
}

func TestBuildGraph(t *testing.T) {
	risk := cvo.Risk{Name: "ARisk", Message: "A is broken.", URL: "https://example.com/a"}
	top := Topology{Version: "4.16.1", Channel: "fast-4.16", Masters: 1, Workers: 1,
		Graph: []string{"4.16.1", "4.16.2"},
		Releases: []cvo.GraphRelease{
			{Version: "4.16.2", Channels: []string{"stable-4.16", "fast-4.16"}},
			{Version: "4.16.3", Channels: []string{"fast-4.16"}, Risks: []cvo.Risk{risk}},
			{Version: "4.17.0", Channels: []string{"candidate-4.17"}},
		}}
	o, err := Build(top, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	st := o.ClusterVersion.Status
	if len(st.AvailableUpdates) != 1 || st.AvailableUpdates[0].Version != "4.16.2" || st.AvailableUpdates[0].Image != cvo.ReleaseImage("4.16.2") {
		t.Errorf("availableUpdates = %+v", st.AvailableUpdates)
	}
	if len(st.ConditionalUpdates) != 1 || st.ConditionalUpdates[0].Release.Version != "4.16.3" || st.ConditionalUpdates[0].Conditions[0].Reason != "ARisk" {
		t.Errorf("conditionalUpdates = %+v", st.ConditionalUpdates)
	}
	if len(st.Desired.Channels) != 1 || st.Desired.Channels[0] != "fast-4.16" {
		t.Errorf("desired.channels = %v: 4.16.1 has no channel list, so it is in the spec channel", st.Desired.Channels)
	}
	g, err := cvo.DecodeGraph(o.GraphConfigMap.Data[cvo.GraphKey])
	if err != nil {
		t.Fatal(err)
	}
	if o.GraphConfigMap.Namespace != "openshift-cluster-version" || o.GraphConfigMap.Name != "ocpsim-update-graph" || len(g) != 4 {
		t.Errorf("graph ConfigMap %s/%s holds %+v", o.GraphConfigMap.Namespace, o.GraphConfigMap.Name, g)
	}
	if r, _ := g.Lookup("4.16.2"); len(r.Channels) != 2 {
		t.Errorf("a Releases entry details the Graph entry of its version: %+v", r)
	}

	// a plain topology keeps its old meaning: every release in every channel
	o, err = Build(Topology{Version: "4.16.1", Masters: 1, Graph: []string{"4.16.1", "4.16.2", "4.17.0"}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if st := o.ClusterVersion.Status; len(st.AvailableUpdates) != 2 || len(st.ConditionalUpdates) != 0 || len(st.Desired.Channels) != 1 || st.Desired.Channels[0] != "stable-4.16" {
		t.Errorf("plain graph: %+v", st)
	}

	for _, bad := range []Topology{
		{Version: "4.16.1", Masters: 1, Releases: []cvo.GraphRelease{{Version: "4.16.2"}, {Version: "4.16.2"}}},
		{Version: "4.16.1", Masters: 1, Releases: []cvo.GraphRelease{{Version: "4.16"}}},
		{Version: "4.16.1", Masters: 1, Releases: []cvo.GraphRelease{{Version: "4.16.2", Risks: []cvo.Risk{{Name: "R"}}}}},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("Validate(%+v) accepted", bad.Releases)
		}
	}
}

// TestCPMSOperatorDeployment: seeded only on request, with one replica and
// the release's version, which the operator reports.
func TestCPMSOperatorDeployment(t *testing.T) {
	o, err := Build(Topology{Version: "4.16.1", Masters: 3, Workers: 0}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if o.CPMSOperatorDeployment != nil {
		t.Errorf("seeded without being asked for: %+v", o.CPMSOperatorDeployment.ObjectMeta)
	}
	o, err = Build(Topology{Version: "4.16.1", Masters: 3, Workers: 0, CPMSOperator: true}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	d := o.CPMSOperatorDeployment
	if d == nil || d.Namespace != "openshift-machine-api" || d.Name != "control-plane-machine-set-operator" || d.Spec.Replicas == nil || *d.Spec.Replicas != 1 {
		t.Fatalf("CPMS operator Deployment = %+v", d)
	}
	c := cvo.OperatorContainer(d)
	if c == nil || c.Image != cvo.CPMSOperatorImage(cvo.ReleaseImage("4.16.1")) || len(c.Env) != 1 || c.Env[0] != (corev1.EnvVar{Name: "RELEASE_VERSION", Value: "4.16.1"}) {
		t.Errorf("operator container %+v", c)
	}
	if !cvo.OperatorRuns(d) {
		t.Error("the seeded operator does not run")
	}
	f := filepath.Join(t.TempDir(), "t.yaml")
	if err := os.WriteFile(f, []byte("masters: 3\ncpmsOperator: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if tp, err := Load(f); err != nil || !tp.CPMSOperator {
		t.Errorf("Load cpmsOperator = %+v, %v", tp, err)
	}
}
