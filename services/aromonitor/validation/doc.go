// Package validation holds the tests that apply aro-monitor's APIs to a real
// kube-apiserver: ARO's Cluster objects as the resource provider writes them
// apply unchanged and keep every field, the status ARO's checkers write is
// accepted, and MonitorConfig defaults and CEL rules behave as documented.
package validation
