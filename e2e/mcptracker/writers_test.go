package mcptracker

import (
	"context"
	"fmt"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/e2e/framework"
	"github.com/upshift-io/upshift/libs/scheme"
)

// The UpgradeConfig status has two writers, the upgrade-scheduler and the
// mcp-tracker, each with its own fields. This file holds the racing-writers
// check: every revision of the object, as a watch delivers them, is compared
// with the one before, and a field of either writer that was there and is
// gone is reported. It also checks what makes that hold by design rather
// than by luck: each writer owns its fields under its own manager by
// server-side apply, and neither write is refused on a resourceVersion.

// revisions are the UpgradeConfig's revisions in the order the watch
// delivered them.
type revisions struct {
	mu   sync.Mutex
	list []*upgradev1alpha1.UpgradeConfig
}

// watchRevisions records every revision of the UpgradeConfig from now on.
func watchRevisions(ctx context.Context) *revisions {
	GinkgoHelper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: scheme.Scheme})
	Expect(err).NotTo(HaveOccurred())
	var list upgradev1alpha1.UpgradeConfigList
	Expect(wc.List(ctx, &list, client.InNamespace(namespace))).To(Succeed())
	w, err := wc.Watch(context.Background(), &upgradev1alpha1.UpgradeConfigList{}, client.InNamespace(namespace),
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(w.Stop)
	r := &revisions{}
	go func() {
		for ev := range w.ResultChan() {
			uc, ok := ev.Object.(*upgradev1alpha1.UpgradeConfig)
			if !ok || uc.Name != ucName || ev.Type == watch.Deleted {
				continue
			}
			r.mu.Lock()
			r.list = append(r.list, uc)
			r.mu.Unlock()
		}
	}()
	return r
}

func (r *revisions) all() []*upgradev1alpha1.UpgradeConfig {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*upgradev1alpha1.UpgradeConfig(nil), r.list...)
}

// lostFields compares each revision with the one before it and lists what
// either writer had written and the next revision no longer shows. Within
// one update nothing of either is ever removed: the tracker's pools, its
// WorkersUpgraded condition and its worker times; the scheduler's history
// entries, their phase, start time and step conditions, and its own
// conditions.
func lostFields(revs []*upgradev1alpha1.UpgradeConfig) []string {
	var lost []string
	for i := 1; i < len(revs); i++ {
		prev, cur := revs[i-1].Status, revs[i].Status
		at := func(format string, args ...any) {
			lost = append(lost, fmt.Sprintf("resourceVersion %s → %s: ", revs[i-1].ResourceVersion, revs[i].ResourceVersion)+fmt.Sprintf(format, args...))
		}
		for _, p := range prev.Pools {
			if !hasPool(cur.Pools, p.Name) {
				at("mcp-tracker's status.pools[%s] gone", p.Name)
			}
		}
		for _, c := range prev.Conditions {
			if meta.FindStatusCondition(cur.Conditions, c.Type) == nil {
				owner := "upgrade-scheduler"
				if c.Type == upgradev1alpha1.WorkersUpgradedCondition {
					owner = "mcp-tracker"
				}
				at("%s's condition %s gone", owner, c.Type)
			}
		}
		for _, ph := range prev.History {
			ch := historyEntry(cur.History, ph.Version)
			if ch == nil {
				at("upgrade-scheduler's history[%s] gone", ph.Version)
				continue
			}
			if ph.Phase != "" && ch.Phase == "" {
				at("upgrade-scheduler's history[%s].phase gone", ph.Version)
			}
			if ph.StartTime != nil && ch.StartTime == nil {
				at("upgrade-scheduler's history[%s].startTime gone", ph.Version)
			}
			if len(ch.Conditions) < len(ph.Conditions) {
				at("upgrade-scheduler's history[%s].conditions: %d of %d left", ph.Version, len(ch.Conditions), len(ph.Conditions))
			}
			if ph.WorkerStartTime != nil && ch.WorkerStartTime == nil {
				at("mcp-tracker's history[%s].workerStartTime gone", ph.Version)
			}
			if ph.WorkerCompleteTime != nil && ch.WorkerCompleteTime == nil {
				at("mcp-tracker's history[%s].workerCompleteTime gone", ph.Version)
			}
		}
	}
	return lost
}

func hasPool(pools []upgradev1alpha1.PoolUpdate, name string) bool {
	for _, p := range pools {
		if p.Name == name {
			return true
		}
	}
	return false
}

func historyEntry(h []upgradev1alpha1.UpgradeHistory, version string) *upgradev1alpha1.UpgradeHistory {
	for i := range h {
		if h[i].Version == version {
			return &h[i]
		}
	}
	return nil
}

// statusManagers are the managers of uc's status fields, as
// "manager/operation".
func statusManagers(uc *upgradev1alpha1.UpgradeConfig) []string {
	var out []string
	for _, e := range uc.ManagedFields {
		if e.Subresource == "status" {
			out = append(out, e.Manager+"/"+string(e.Operation))
		}
	}
	return out
}

// refusedStatusWrites counts the status writes of the identity's user the
// API server refused with a conflict.
func refusedStatusWrites(id *framework.Identity) int {
	GinkgoHelper()
	evs, err := env.AuditEvents(framework.ServiceAccountUser(namespace, id.ServiceAccount))
	Expect(err).NotTo(HaveOccurred())
	n := 0
	for _, e := range evs {
		if e.ObjectRef != nil && e.ObjectRef.Resource == "upgradeconfigs" && e.ObjectRef.Subresource == "status" &&
			e.ResponseStatus != nil && e.ResponseStatus.Code == 409 {
			n++
		}
	}
	return n
}

// mustMisowned is framework.MisownedStatusFields for a spec.
func mustMisowned(uc *upgradev1alpha1.UpgradeConfig) []string {
	GinkgoHelper()
	out, err := framework.MisownedStatusFields(uc)
	Expect(err).NotTo(HaveOccurred())
	return out
}
