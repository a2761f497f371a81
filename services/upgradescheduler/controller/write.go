package controller

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/csaupgrade"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	upgradeac "github.com/upshift-io/upshift/api/upgrade/v1alpha1/applyconfiguration/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/libs/apply"
)

// FieldManager is the scheduler's field manager on the UpgradeConfig status.
// The mcp-tracker writes the same status under its own ("mcp-tracker").
const FieldManager = "upgrade-scheduler"

// The UpgradeConfig status has two writers. The mcp-tracker owns
// status.pools, the WorkersUpgraded condition and, in each history entry,
// workerStartTime and workerCompleteTime; the scheduler owns everything
// else. Each applies only its own fields: an apply that carried the other's
// fields (as read from a cache that may lag) would take them over, and a
// later apply that left them out would remove them.

// ownStatus is st without the mcp-tracker's fields: what the scheduler
// applies. st is not modified.
func ownStatus(st *upgradev1alpha1.UpgradeConfigStatus) *upgradev1alpha1.UpgradeConfigStatus {
	own := st.DeepCopy()
	own.Pools = nil
	own.Conditions = own.Conditions[:0]
	for _, c := range st.Conditions {
		if c.Type != upgradev1alpha1.WorkersUpgradedCondition {
			own.Conditions = append(own.Conditions, c)
		}
	}
	if len(own.Conditions) == 0 {
		own.Conditions = nil
	}
	for i := range own.History {
		own.History[i].WorkerStartTime, own.History[i].WorkerCompleteTime = nil, nil
	}
	return own
}

// statusApplyConfiguration is the apply configuration of uc's status st,
// the scheduler's fields only. A JSON round trip fills it from the typed
// status, so a field the API type gains is written without a change here.
func statusApplyConfiguration(uc *upgradev1alpha1.UpgradeConfig, st *upgradev1alpha1.UpgradeConfigStatus) (*upgradeac.UpgradeConfigApplyConfiguration, error) {
	data, err := json.Marshal(ownStatus(st))
	if err != nil {
		return nil, err
	}
	sac := upgradeac.UpgradeConfigStatus()
	if err := json.Unmarshal(data, sac); err != nil {
		return nil, err
	}
	return upgradeac.UpgradeConfig(uc.Name, uc.Namespace).WithStatus(sac), nil
}

// writeStatus applies the scheduler's fields of st to uc and returns the
// object as the API server left it (both writers' fields, at the new
// resourceVersion): what the metrics export, and the version the next plan
// waits for the cache to show.
func writeStatus(ctx context.Context, c client.Client, uc *upgradev1alpha1.UpgradeConfig, st *upgradev1alpha1.UpgradeConfigStatus) (*upgradev1alpha1.UpgradeConfig, error) {
	if err := adoptUpdatedFields(ctx, c, uc); err != nil {
		return nil, err
	}
	ac, err := statusApplyConfiguration(uc, st)
	if err != nil {
		return nil, err
	}
	if _, err := apply.Status(ctx, c, ac, FieldManager); err != nil {
		return nil, err
	}
	// The answer was decoded into ac: the whole object as written.
	data, err := json.Marshal(ac)
	if err != nil {
		return nil, err
	}
	written := &upgradev1alpha1.UpgradeConfig{}
	if err := json.Unmarshal(data, written); err != nil {
		return nil, fmt.Errorf("decoding the written UpgradeConfig: %w", err)
	}
	return written, nil
}

// adoptUpdatedFields hands the status fields written by update (by an
// earlier scheduler, by MUO before Upshift took over, or by hand) to the
// scheduler's apply. Without it an apply could never remove them: server-side
// apply removes only the fields its own manager owned, so a capacity
// reservation an update once wrote would stay after the scheduler cleared it.
// The mcp-tracker's fields are not touched: it applies them and owns them.
// The patch is conditional on uc's resourceVersion; a conflict is retried by
// the next pass from a fresher copy.
func adoptUpdatedFields(ctx context.Context, c client.Client, uc *upgradev1alpha1.UpgradeConfig) error {
	updaters := sets.New[string]()
	for _, e := range uc.ManagedFields {
		if e.Operation == metav1.ManagedFieldsOperationUpdate && e.Subresource == "status" {
			updaters.Insert(e.Manager)
		}
	}
	if updaters.Len() == 0 {
		return nil
	}
	patch, err := csaupgrade.UpgradeManagedFieldsPatch(uc, updaters, FieldManager, csaupgrade.Subresource("status"))
	if err != nil || patch == nil {
		return err
	}
	return c.Patch(ctx, uc, client.RawPatch(types.JSONPatchType, patch))
}
