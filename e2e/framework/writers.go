package framework

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
)

// statusFieldOwner is who may own a path of UpgradeConfig status, as the
// "one writer per field" table of docs/architecture.md says: the
// mcp-tracker its pools, its WorkersUpgraded condition and the worker times
// of each history entry; the upgrade-scheduler everything else. A list
// item's key field (a history entry's version, a condition's type) is
// owned by every writer that applies the item, by server-side apply's
// design.
func statusFieldOwner(path string) (owner string, shared bool) {
	switch {
	case historyKey.MatchString(path), conditionKey.MatchString(path):
		return "", true
	case strings.HasPrefix(path, ".status.pools"),
		strings.HasPrefix(path, `.status.conditions[type="WorkersUpgraded"]`),
		workerTime.MatchString(path):
		return "mcp-tracker", false
	}
	return "upgrade-scheduler", false
}

var (
	historyKey   = regexp.MustCompile(`^\.status\.history\[version="[^"]*"\](\.version)?$`)
	conditionKey = regexp.MustCompile(`^\.status\.conditions\[type="[^"]*"\](\.type)?$`)
	workerTime   = regexp.MustCompile(`^\.status\.history\[version="[^"]*"\]\.(workerStartTime|workerCompleteTime)$`)
)

// MisownedStatusFields lists every status path of the UpgradeConfig that a
// field manager owns while the one-writer-per-field table gives it to
// another (or does not know the manager), from its managedFields.
func MisownedStatusFields(uc *upgradev1alpha1.UpgradeConfig) ([]string, error) {
	owned, err := OwnedPaths(uc, "status", nil)
	if err != nil {
		return nil, err
	}
	var out []string
	for manager, paths := range owned {
		for _, path := range paths {
			if owner, shared := statusFieldOwner(path); !shared && owner != manager {
				out = append(out, fmt.Sprintf("%s owns %s, which is %s's", manager, path, owner))
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// OwnedPaths reads o's managedFields: the paths each field manager owns in
// subresource ("" for the object itself), for the managers of which reads
// says yes (nil: every manager).
func OwnedPaths(o client.Object, subresource string, reads func(manager string) bool) (map[string][]string, error) {
	out := map[string][]string{}
	for _, e := range o.GetManagedFields() {
		if e.Subresource != subresource || e.FieldsV1 == nil || (reads != nil && !reads(e.Manager)) {
			continue
		}
		set := &fieldpath.Set{}
		if err := set.FromJSON(e.FieldsV1.GetRawReader()); err != nil {
			return nil, fmt.Errorf("managedFields of %s: %w", e.Manager, err)
		}
		set.Iterate(func(p fieldpath.Path) { out[e.Manager] = append(out[e.Manager], p.String()) })
	}
	return out, nil
}
