// Package validation holds the tests that apply node-gate's API
// (nodegate.upshift.io/v1alpha1) to a real kube-apiserver: the mutex
// operator's own examples must apply with only their apiVersion changed and
// keep every field, invalid objects must be rejected with messages naming
// the field, and the hook Jobs the planner builds from those examples must
// be accepted by the Job API.
package validation
