// Package v1alpha1 holds API types shared by several Upshift API groups. It
// defines no kinds and no API group of its own: the groups that embed these
// types (upgrade.managed.openshift.io UpgradeConfig, nodegate.upshift.io
// MutexRunConfig) carry them in their own schemas, so a concept such as a
// maintenance window is written, validated and parsed (libs/window) the same
// way everywhere.
//
// +kubebuilder:object:generate=true
package v1alpha1
