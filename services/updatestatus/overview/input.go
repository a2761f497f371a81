// Package overview is the pure core of `kubectl upshift overview`: from the
// objects every Upshift component publishes (read elsewhere and handed in as
// plain values), it builds one model of the upgrade — a section per
// component, the line saying what each one is waiting for, and one verdict —
// and renders it as text that fits a terminal.
//
// Nothing here reads the cluster: package overview/command does, so that
// every case of the view (a component not installed, a read refused, a
// stalled update) is a table test of Build.
package overview

import (
	"time"

	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"

	aromonitorv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"
	nodegatev1alpha1 "github.com/upshift-io/upshift/api/nodegate/v1alpha1"
	updatev1alpha1 "github.com/upshift-io/upshift/api/update/v1alpha1"
	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
)

// Outcome is how the read of one kind went. A view that stops at the first
// refused read helps nobody, so each kind carries its own outcome and the
// view says, per section, what it could not see.
type Outcome string

const (
	// Found: the read succeeded. A list may be empty; a singleton is set.
	Found Outcome = "Found"
	// Absent: the kind is served but the singleton does not exist (yet).
	Absent Outcome = "Absent"
	// NotInstalled: the server does not serve the kind; its CRD, and so
	// the component that defines it, is not installed.
	NotInstalled Outcome = "NotInstalled"
	// Forbidden: RBAC refused the read.
	Forbidden Outcome = "Forbidden"
	// Failed: any other error (Err says which).
	Failed Outcome = "Failed"
)

// Read is one kind's read: the object (or list) and how the read went.
type Read[T any] struct {
	Object  T
	Outcome Outcome
	// Err is the error of a Forbidden or Failed read.
	Err string
}

// Ok says whether the object was read.
func (r Read[T]) Ok() bool { return r.Outcome == Found }

// Input is everything the view is built from.
type Input struct {
	// Now is the wall clock: "in 3h", "for 20m".
	Now time.Time

	ClusterVersion Read[*configv1.ClusterVersion]
	// UpgradeStatus is the update-status-controller's singleton "cluster".
	UpgradeStatus Read[*updatev1alpha1.UpgradeStatus]
	// UpgradeConfigs are the upgrade-scheduler's, in every namespace; the
	// mcp-tracker writes its pool records into their status too.
	UpgradeConfigs Read[[]upgradev1alpha1.UpgradeConfig]
	// MutexRuns are node-gate's runs, in every namespace.
	MutexRuns Read[[]nodegatev1alpha1.MutexRunConfig]
	// ControlPlaneMachineSet is openshift-machine-api/cluster, whose status
	// the cpms-controller writes.
	ControlPlaneMachineSet Read[*machinev1.ControlPlaneMachineSet]
	// MonitorConfig is aro-monitor's singleton "cluster".
	MonitorConfig Read[*aromonitorv1alpha1.MonitorConfig]
}
