// Package faults names the failures ocpsim can inject and reads them from
// objects. A fault is requested by the annotation
//
//	ocpsim.upshift.io/fault: <Fault>[,<Fault>...]
//
// on the object it concerns (ClusterOperator, ClusterVersion, Node, Machine,
// MachineConfig), either by a test, by a person with kubectl, or by
// `ocpsim run --fault kind/name=Fault`. Removing the annotation heals the fault
// where healing is meaningful (an operator recovers, a drain goes through).
package faults

import (
	"fmt"
	"slices"
	"strings"
)

// Annotation is the key that requests faults on an object.
const Annotation = "ocpsim.upshift.io/fault"

// Fault is one kind of injected failure.
type Fault string

const (
	// OperatorDegraded makes a ClusterOperator report Degraded=True; the CVO
	// does not move past it during an update and reports Failing.
	OperatorDegraded Fault = "Degraded"
	// OperatorUnavailable makes a ClusterOperator report Available=False.
	OperatorUnavailable Fault = "Unavailable"
	// OperatorNotUpgradeable makes a ClusterOperator report Upgradeable=False
	// (reason InjectedFault); the CVO then reports Upgradeable=False and
	// refuses updates to another minor version.
	OperatorNotUpgradeable Fault = "NotUpgradeable"
	// VersionFailing makes the ClusterVersion report Failing=True.
	VersionFailing Fault = "Failing"
	// AdminAckRequired makes the CVO's admin-ack check fail on the
	// ClusterVersion: Upgradeable=False, reason AdminAckRequired, as for an
	// admin gate of the next minor that is not acknowledged.
	AdminAckRequired Fault = "AdminAckRequired"
	// DrainStuck makes every drain of the Node hang (as if a pod could never be
	// evicted) until the MCO gives up and marks the node Degraded.
	DrainStuck Fault = "DrainStuck"
	// NeverReady makes the Node stay NotReady after its next reboot.
	NeverReady Fault = "NeverReady"
	// Unreconcilable makes the machine-config-daemon refuse the next config on
	// the Node (on a Node) or every config containing it (on a MachineConfig).
	Unreconcilable Fault = "Unreconcilable"
	// ProvisionFailed makes a Machine go to phase Failed instead of Provisioned.
	ProvisionFailed Fault = "ProvisionFailed"
	// ProvisionStuck makes a Machine stay in phase Provisioning (its instance
	// never comes up, and no error says so) until the fault is removed.
	ProvisionStuck Fault = "ProvisionStuck"
)

// Targets lists which object kinds each fault applies to (lower-case kinds as
// used by the --fault flag).
var Targets = map[Fault][]string{
	OperatorDegraded:       {"clusteroperator"},
	OperatorUnavailable:    {"clusteroperator"},
	OperatorNotUpgradeable: {"clusteroperator"},
	VersionFailing:         {"clusterversion"},
	AdminAckRequired:       {"clusterversion"},
	DrainStuck:             {"node"},
	NeverReady:             {"node"},
	Unreconcilable:         {"node", "machineconfig"},
	ProvisionFailed:        {"machine"},
	ProvisionStuck:         {"machine"},
}

// Parse reads the fault list in an annotation value.
func Parse(value string) []Fault {
	var out []Fault
	for _, f := range strings.Split(value, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, Fault(f))
		}
	}
	return out
}

// Has reports whether the annotations request fault f.
func Has(annotations map[string]string, f Fault) bool {
	return slices.Contains(Parse(annotations[Annotation]), f)
}

// Request is one fault asked for on the command line: kind/name=Fault.
type Request struct {
	Kind, Namespace, Name string
	Fault                 Fault
}

// ParseRequest reads "node/worker-2=NeverReady",
// "clusteroperator/kube-apiserver=Degraded" or
// "machine/openshift-machine-api/worker-a-1=ProvisionFailed" (Machines are
// namespaced; the namespace defaults to openshift-machine-api).
func ParseRequest(s string) (Request, error) {
	ref, f, ok := strings.Cut(s, "=")
	kind, name, ok2 := strings.Cut(ref, "/")
	if !ok || !ok2 || name == "" || f == "" {
		return Request{}, fmt.Errorf("fault %q: want KIND/NAME=FAULT, e.g. node/worker-2=NeverReady", s)
	}
	kind = strings.ToLower(kind)
	r := Request{Kind: kind, Name: name, Fault: Fault(f)}
	kinds, known := Targets[r.Fault]
	if !known {
		return Request{}, fmt.Errorf("fault %q: unknown fault %q (known: %s)", s, f, knownList())
	}
	if !slices.Contains(kinds, kind) {
		return Request{}, fmt.Errorf("fault %q: %s applies to %s, not %s", s, f, strings.Join(kinds, ", "), kind)
	}
	if kind == "machine" {
		r.Namespace = "openshift-machine-api"
		if ns, n, ok := strings.Cut(name, "/"); ok {
			r.Namespace, r.Name = ns, n
		}
	}
	return r, nil
}

func knownList() string {
	var names []string
	for f := range Targets {
		names = append(names, string(f))
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// Add returns the annotation value with f added (idempotent).
func Add(value string, f Fault) string {
	fs := Parse(value)
	if slices.Contains(fs, f) {
		return value
	}
	fs = append(fs, f)
	parts := make([]string, len(fs))
	for i, x := range fs {
		parts[i] = string(x)
	}
	return strings.Join(parts, ",")
}
