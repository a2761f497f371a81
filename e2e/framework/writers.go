package framework

import (
	"fmt"
	"regexp"
	"strings"

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
	var out []string
	for _, e := range uc.ManagedFields {
		if e.Subresource != "status" || e.FieldsV1 == nil {
			continue
		}
		set := &fieldpath.Set{}
		if err := set.FromJSON(e.FieldsV1.GetRawReader()); err != nil {
			return nil, fmt.Errorf("managedFields of %s: %w", e.Manager, err)
		}
		set.Iterate(func(p fieldpath.Path) {
			path := p.String()
			if owner, shared := statusFieldOwner(path); !shared && owner != e.Manager {
				out = append(out, fmt.Sprintf("%s owns %s, which is %s's", e.Manager, path, owner))
			}
		})
	}
	return out, nil
}
