// Package seed builds and creates a realistic OpenShift cluster at a given
// version: ClusterVersion, ClusterOperators, MachineConfigs and rendered
// configs, pools, control-plane and worker Nodes (kwok-managed, zone labels,
// MCO annotations in Done state), Machines and MachineSets with nodeRefs, a
// ControlPlaneMachineSet and optional workloads with PodDisruptionBudgets.
//
// Build is pure (Topology → Objects) and tested without an apiserver; Apply
// creates the objects and writes their status through the status subresource.
package seed

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"os"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/upshift-io/upshift/tools/ocpsim/cvo"
)

// Topology is the shape of the seeded cluster. Its YAML form uses the same
// field names in lowerCamelCase (see Load).
type Topology struct {
	// Version is the current OpenShift version, e.g. 4.16.1.
	Version string `json:"version"`
	// Channel is spec.channel, e.g. stable-4.16.
	Channel string `json:"channel,omitempty"`
	// Graph lists the releases known to the simulated update service, each
	// in every channel and without risks; those newer than the release the
	// CVO reconciles become availableUpdates (and stay so after updates).
	// Empty (and no Releases): Version and its next two z-streams.
	Graph []string `json:"graph,omitempty"`
	// Releases adds releases to the graph (or details those of Graph) with
	// their channels and, for a release reachable only conditionally, its
	// risks: such a release is published in status.conditionalUpdates with
	// a Recommended condition and, unless one of its risks applies, also in
	// availableUpdates. Changing spec.channel recomputes both lists from
	// the releases of the new channel; status.desired.channels lists the
	// channels of the release the CVO reconciles. A release without
	// channels is in every channel. The seeded graph is written to the
	// ConfigMap openshift-cluster-version/ocpsim-update-graph, where the
	// simulated CVO reads it.
	Releases []cvo.GraphRelease `json:"releases,omitempty"`
	// PreviousVersions are older Completed history entries, oldest first.
	PreviousVersions []string `json:"previousVersions,omitempty"`
	// ClusterID is spec.clusterID (a UUID); derived from InfraName when empty.
	ClusterID string `json:"clusterID,omitempty"`
	// InfraName prefixes Machine and Node names.
	InfraName string `json:"infraName,omitempty"`
	Region    string `json:"region,omitempty"`
	// Zones spreads masters and workers round-robin.
	Zones []string `json:"zones,omitempty"`
	// Masters is the number of control-plane nodes (usually 3).
	Masters int `json:"masters"`
	// Workers is the number of nodes in the worker pool.
	Workers int `json:"workers"`
	// WorkerMaxUnavailable is the worker pool's maxUnavailable ("1", "10%").
	WorkerMaxUnavailable string `json:"workerMaxUnavailable,omitempty"`
	// CustomPools are extra pools (e.g. infra) whose nodes also carry the
	// worker role and select the worker MachineConfigs plus their own.
	CustomPools []CustomPool `json:"customPools,omitempty"`
	// Workloads are Deployments on the workers, optionally with a PDB.
	Workloads []Workload `json:"workloads,omitempty"`
	// CPMSOperator seeds the control-plane-machine-set operator's
	// Deployment (openshift-machine-api/control-plane-machine-set-operator,
	// one replica on a master), which switches on the simulated operator
	// (package cpmsoperator): it replaces deleted control-plane Machines
	// of an OnDelete set and reports its ClusterOperator, and scaling the
	// Deployment to zero stops it and stalls a cluster update at
	// control-plane-machine-set, as on a real cluster. Off by default: a
	// cluster without it has nothing act on its control-plane Machines.
	CPMSOperator bool `json:"cpmsOperator,omitempty"`
}

// CustomPool is an extra MachineConfigPool with its own MachineSets.
type CustomPool struct {
	Name           string `json:"name"`
	Nodes          int    `json:"nodes"`
	MaxUnavailable string `json:"maxUnavailable,omitempty"`
	Paused         bool   `json:"paused,omitempty"`
}

// Workload is a Deployment with an optional PodDisruptionBudget.
type Workload struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
	Replicas  int32  `json:"replicas"`
	// PDBMaxUnavailable / PDBMinAvailable create a PDB when set ("0", "1", "50%").
	PDBMaxUnavailable string `json:"pdbMaxUnavailable,omitempty"`
	PDBMinAvailable   string `json:"pdbMinAvailable,omitempty"`
	// NodeName pins the pods to one node (to block exactly that node's drain).
	NodeName string `json:"nodeName,omitempty"`
}

// Default returns a 3 master + 3 worker cluster at 4.16.1 with two updates.
func Default() Topology {
	return Topology{Version: "4.16.1", Masters: 3, Workers: 3}
}

// WithDefaults fills empty fields.
func (t Topology) WithDefaults() Topology {
	if t.Version == "" {
		t.Version = "4.16.1"
	}
	mm := regexp.MustCompile(`^(\d+)\.(\d+)\.`).FindStringSubmatch(t.Version)
	if t.Channel == "" && mm != nil {
		t.Channel = "stable-" + mm[1] + "." + mm[2]
	}
	if len(t.Graph) == 0 && len(t.Releases) == 0 && mm != nil {
		var z int
		fmt.Sscanf(strings.TrimPrefix(t.Version, mm[0]), "%d", &z)
		t.Graph = []string{t.Version, fmt.Sprintf("%s.%s.%d", mm[1], mm[2], z+1), fmt.Sprintf("%s.%s.%d", mm[1], mm[2], z+2)}
	}
	if t.InfraName == "" {
		t.InfraName = "ocp"
	}
	if t.ClusterID == "" {
		t.ClusterID = fakeUUID(t.InfraName)
	}
	if t.Region == "" {
		t.Region = "us-east-1"
	}
	if len(t.Zones) == 0 {
		t.Zones = []string{t.Region + "a", t.Region + "b", t.Region + "c"}
	}
	if t.WorkerMaxUnavailable == "" {
		t.WorkerMaxUnavailable = "1"
	}
	for i := range t.Workloads {
		if t.Workloads[i].Namespace == "" {
			t.Workloads[i].Namespace = "workloads"
		}
	}
	return t
}

// UpdateGraph is the simulated update service's graph: Graph and Releases
// (a Releases entry details the Graph entry of its version), and Version.
func (t Topology) UpdateGraph() cvo.Graph {
	t = t.WithDefaults()
	var g cvo.Graph
	detailed := map[string]bool{}
	for _, r := range t.Releases {
		detailed[r.Version] = true
	}
	add := func(r cvo.GraphRelease) {
		if _, ok := g.Lookup(r.Version); !ok {
			g = append(g, r)
		}
	}
	for _, v := range t.Graph {
		if !detailed[v] {
			add(cvo.GraphRelease{Version: v})
		}
	}
	for _, r := range t.Releases {
		add(r)
	}
	add(cvo.GraphRelease{Version: t.Version})
	return g
}

var nameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// Validate reports the first problem with the topology.
func (t Topology) Validate() error {
	t = t.WithDefaults()
	if !regexp.MustCompile(`^\d+\.\d+\.\d+`).MatchString(t.Version) {
		return fmt.Errorf("version %q: want x.y.z, e.g. 4.16.1", t.Version)
	}
	if t.Masters < 1 {
		return fmt.Errorf("masters %d: need at least 1 control-plane node", t.Masters)
	}
	if t.Workers < 0 {
		return fmt.Errorf("workers %d: must not be negative", t.Workers)
	}
	if !nameRE.MatchString(t.InfraName) {
		return fmt.Errorf("infraName %q: must be a DNS label", t.InfraName)
	}
	for _, z := range t.Zones {
		if !nameRE.MatchString(z) {
			return fmt.Errorf("zone %q: must be a DNS label", z)
		}
	}
	if _, err := ParseIntOrPercent(t.WorkerMaxUnavailable); err != nil {
		return fmt.Errorf("workerMaxUnavailable: %w", err)
	}
	seenRelease := map[string]bool{}
	for _, r := range t.Releases {
		if seenRelease[r.Version] {
			return fmt.Errorf("releases: %s is listed twice", r.Version)
		}
		seenRelease[r.Version] = true
	}
	if err := t.UpdateGraph().Validate(); err != nil {
		return err
	}
	seen := map[string]bool{"master": true, "worker": true}
	for _, p := range t.CustomPools {
		if !nameRE.MatchString(p.Name) || seen[p.Name] || p.Name == "arbiter" {
			return fmt.Errorf("custom pool %q: must be a new DNS label other than master, worker, arbiter", p.Name)
		}
		seen[p.Name] = true
		if p.Nodes < 0 {
			return fmt.Errorf("custom pool %s: nodes must not be negative", p.Name)
		}
		if p.MaxUnavailable != "" {
			if _, err := ParseIntOrPercent(p.MaxUnavailable); err != nil {
				return fmt.Errorf("custom pool %s maxUnavailable: %w", p.Name, err)
			}
		}
	}
	for _, w := range t.Workloads {
		if !nameRE.MatchString(w.Name) {
			return fmt.Errorf("workload %q: must be a DNS label", w.Name)
		}
		for _, v := range []string{w.PDBMaxUnavailable, w.PDBMinAvailable} {
			if v != "" {
				if _, err := ParseIntOrPercent(v); err != nil {
					return fmt.Errorf("workload %s PDB: %w", w.Name, err)
				}
			}
		}
		if w.PDBMaxUnavailable != "" && w.PDBMinAvailable != "" {
			return fmt.Errorf("workload %s: set pdbMaxUnavailable or pdbMinAvailable, not both", w.Name)
		}
	}
	return nil
}

// ParseIntOrPercent reads "1" or "10%".
func ParseIntOrPercent(s string) (intstr.IntOrString, error) {
	if strings.HasSuffix(s, "%") {
		var n int
		if _, err := fmt.Sscanf(s, "%d%%", &n); err != nil || n < 0 || n > 100 {
			return intstr.IntOrString{}, fmt.Errorf("%q is not a percentage", s)
		}
		return intstr.FromString(s), nil
	}
	var n int32
	if _, err := fmt.Sscanf(s, "%d", &n); err != nil || n < 0 || fmt.Sprint(n) != s {
		return intstr.IntOrString{}, fmt.Errorf("%q is not a non-negative integer or a percentage", s)
	}
	return intstr.FromInt32(n), nil
}

// Load reads a Topology from a YAML (or JSON) file, rejecting unknown fields.
func Load(path string) (Topology, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Topology{}, err
	}
	var t Topology
	if err := yaml.UnmarshalStrict(b, &t); err != nil {
		return Topology{}, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

func fakeUUID(seed string) string {
	sum := sha1.Sum([]byte(seed)) //nolint:gosec // a stable fake cluster ID
	h := hex.EncodeToString(sum[:])
	return h[0:8] + "-" + h[8:12] + "-4" + h[13:16] + "-8" + h[17:20] + "-" + h[20:32]
}
