// Package v1alpha1 holds the nodegate.upshift.io/v1alpha1 API that node-gate
// reconciles: MutexRule (operations to run around each node's update),
// MutexTarget (the MachineConfigPools whose nodes are gated) and
// MutexRunConfig (a run: which rules apply to which targets, and how).
//
// The kinds and every field of the node-upgrade-mutex-operator keep their
// names, JSON spelling and meaning (MutexRule jobName, jobNamespace, jobSpec,
// cleanUpJobSpec, type; MutexTarget machineConfigPools; MutexRunConfig canary,
// mutexRules, mutexTargets, skipTLSVerify), so an object written for that
// operator applies here with only its apiVersion changed. Its Job specs get
// the real batch/v1 JobSpec schema instead of preserve-unknown-fields, and its
// fields get validation with messages naming the field.
//
// Everything Upshift adds is optional: ordered pre- and post-update hooks per
// rule with a timeout, retries, a failure policy and a placement; a run's
// maxUnavailable, maintenance windows, alert health gate and paused switch;
// and a status that records every node's progress, the planned order, and the
// originals of everything the run changes.
//
// The CRDs are generated without field descriptions (see the Makefile): with
// them, the four embedded JobSpec schemas make the MutexRule CRD 1.28 MB as
// JSON, close to etcd's default 1.5 MiB request limit before the apiserver
// adds managed fields; without them it is 263 KB, still over the 256 KiB a
// client-side kubectl apply records in its annotation. tools/crdtrim then
// replaces the schema of each pod template's ephemeralContainers (a field no
// template may set) with a rule refusing it: about 216 KB.
//
// +kubebuilder:object:generate=true
// +kubebuilder:ac:generate=true
// +groupName=nodegate.upshift.io
package v1alpha1
