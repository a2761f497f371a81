package main

import (
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
)

// pkgInfo is what OLM needs about a component that its chart cannot say.
type pkgInfo struct {
	displayName string
	categories  string
	// ownNamespace: the component also works with an OperatorGroup that
	// targets only its own namespace (see installModes).
	ownNamespace bool
	required     []v1alpha1.CRDDescription
}

// packages are the charts that become OLM packages, named upshift-<chart>.
//
// Install modes. Every component watches cluster-scoped objects (nodes,
// pools, ClusterVersion...) and the few namespaced ones its flags name (its
// own namespace, openshift-machine-api); none watches "the namespaces of
// its OperatorGroup". So:
//   - AllNamespaces: supported by all. OLM then turns the CSV's
//     permissions (the chart's Roles in its own namespace) into cluster-wide
//     grants, as it does for every operator in that mode.
//   - OwnNamespace: supported where nothing depends on the OperatorGroup's
//     namespaces. It keeps the chart's Roles namespaced, so it is the
//     least-privileged choice. Not for cpms-controller: OLM restricts a
//     CSV's webhooks to the OperatorGroup's namespaces, and its webhook must
//     see the ControlPlaneMachineSet in openshift-machine-api.
//   - SingleNamespace, MultiNamespace: no component reconciles objects in a
//     list of target namespaces, so none claims them.
//
// Not packaged: node-gate, whose chart guards hook Jobs with a
// ValidatingAdmissionPolicy, and aro-monitor, whose chart creates the
// namespace of its worker agents' Leases; a registry+v1 bundle can carry
// neither kind, and installing without them would drop a security boundary.
// Build refuses both charts for that reason.
var packages = map[string]pkgInfo{
	"update-status-controller": {
		displayName:  "Upshift Update Status Controller",
		categories:   "Monitoring",
		ownNamespace: true,
	},
	"upgrade-scheduler": {
		displayName:  "Upshift Upgrade Scheduler",
		categories:   "OpenShift Optional",
		ownNamespace: true,
	},
	"mcp-tracker": {
		displayName:  "Upshift MachineConfigPool Tracker",
		categories:   "Monitoring",
		ownNamespace: true,
		// It writes UpgradeConfig status and does not start without the
		// kind; the upgrade-scheduler's package owns the CRD (so may
		// another operator that provides it, e.g. MUO's).
		required: []v1alpha1.CRDDescription{{
			Name:        "upgradeconfigs.upgrade.managed.openshift.io",
			Version:     "v1alpha1",
			Kind:        "UpgradeConfig",
			DisplayName: "UpgradeConfig",
			Description: "The upgrade the tracker reports pool progress into.",
		}},
	},
	"cpms-controller": {
		displayName:  "Upshift Control Plane Machine Set Controller",
		categories:   "OpenShift Optional",
		ownNamespace: false,
	},
}

func installModes(p pkgInfo) []v1alpha1.InstallMode {
	return []v1alpha1.InstallMode{
		{Type: v1alpha1.InstallModeTypeOwnNamespace, Supported: p.ownNamespace},
		{Type: v1alpha1.InstallModeTypeSingleNamespace, Supported: false},
		{Type: v1alpha1.InstallModeTypeMultiNamespace, Supported: false},
		{Type: v1alpha1.InstallModeTypeAllNamespaces, Supported: true},
	}
}
