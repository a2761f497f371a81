package controller

import (
	"context"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/upshift-io/upshift/services/upgradescheduler/plan"
)

// pdbNodes remembers, per PodDisruptionBudget, the nodes of the pods it
// guards, read from the apiserver (pods are not cached) for the preflight
// report. A budget's status changes with its pods' health, so an entry is
// read again only when the budget's resourceVersion moved.
type pdbNodes struct {
	mu   sync.Mutex
	byID map[string]pdbNodesEntry
}

type pdbNodesEntry struct {
	resourceVersion string
	nodes           []string
}

// readPDBNodes reads, for the budgets named "<namespace>/<name>", the nodes of
// the pods each guards into s.PDBNodes.
func (r *Reconciler) readPDBNodes(ctx context.Context, s *plan.Snapshot, keys []string) {
	if s.PDBNodes == nil {
		s.PDBNodes = map[string][]string{}
	}
	for _, key := range keys {
		s.PDBNodes[key] = []string{}
		for i := range s.PDBs {
			if pdb := &s.PDBs[i]; pdb.Namespace+"/"+pdb.Name == key {
				s.PDBNodes[key] = r.pdbNodes.nodesOf(ctx, r.APIReader, pdb)
			}
		}
	}
}

// nodesOf returns the nodes of the pods pdb selects, sorted; a read that
// fails gives none this plan (the report then names the budget alone).
func (c *pdbNodes) nodesOf(ctx context.Context, r client.Reader, pdb *policyv1.PodDisruptionBudget) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byID[string(pdb.UID)]; ok && e.resourceVersion == pdb.ResourceVersion {
		return e.nodes
	}
	nodes := []string{}
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if pdb.Spec.Selector == nil || err != nil {
		return nodes
	}
	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.InNamespace(pdb.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		log.FromContext(ctx).Info("cannot read the pods a PodDisruptionBudget guards; the report names it without nodes", "pdb", pdb.Namespace+"/"+pdb.Name, "error", err.Error())
		return nodes
	}
	seen := map[string]bool{}
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" && !seen[p.Spec.NodeName] {
			seen[p.Spec.NodeName] = true
			nodes = append(nodes, p.Spec.NodeName)
		}
	}
	sort.Strings(nodes)
	if c.byID == nil {
		c.byID = map[string]pdbNodesEntry{}
	}
	c.byID[string(pdb.UID)] = pdbNodesEntry{resourceVersion: pdb.ResourceVersion, nodes: nodes}
	return nodes
}
