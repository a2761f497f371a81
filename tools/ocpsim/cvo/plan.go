// Package cvo simulates the cluster-version-operator: it validates
// ClusterVersion.spec.desiredUpdate as the CVO does, records history, and
// walks the ClusterOperators to the new version in run-level order (operators
// of one run level in parallel, levels one after another), reporting
// Progressing "Working towards X" and Failing when an operator is degraded or
// unavailable. The machine-config step hands over to the MCO simulator and
// waits for the pools that are required for upgrade (master).
//
// It also plays the update service and the CVO's view of it: the graph's
// releases per channel become availableUpdates and, for releases with
// risks, conditionalUpdates with a Recommended condition; the Upgradeable
// condition aggregates the objections of spec.overrides, the
// ClusterOperators and the admin-ack gate, and the preconditions refuse an
// update to another minor while it is False (with an unmanaged override,
// before 4.22, any update). An operator with its own Deployment
// (Operator.Deployment) that is scaled to zero reports no new version, so
// an update waits on it.
//
// plan.go holds the pure decisions (operator catalogue, run levels,
// validation, version ordering), graph.go the update service, upgradeable.go
// Upgradeable and the preconditions; controller.go the loops.
package cvo

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Operator is one ClusterOperator of the simulated release payload.
type Operator struct {
	Name string
	// RunLevel is the manifest run level (0000_<level>_...); lower levels
	// update first, equal levels in parallel.
	RunLevel int
	// Duration is the simulated time the operator takes to update.
	Duration time.Duration
	// Namespace is its operand namespace (relatedObjects).
	Namespace string
	// Deployment, when set, is the operator's own Deployment. While it
	// exists with no replica asked for (or is being deleted) no operator
	// runs to report the new version, so an update waits on it, as on a real
	// cluster. A cluster seeded without it keeps the CVO simulator playing
	// the operator's version report as for any other operator.
	Deployment types.NamespacedName
}

// MachineConfig is the name of the machine-config ClusterOperator.
const MachineConfig = "machine-config"

// ControlPlaneMachineSet is the name of the control-plane-machine-set
// ClusterOperator.
const ControlPlaneMachineSet = "control-plane-machine-set"

// CPMSOperatorDeployment is where the control-plane-machine-set operator
// runs (its release manifest).
var CPMSOperatorDeployment = types.NamespacedName{Namespace: "openshift-machine-api", Name: "control-plane-machine-set-operator"}

// Operators is the default payload: about thirty operators of a
// self-managed HA cluster with run levels and realistic durations.
func Operators() []Operator {
	m := time.Minute
	op := func(name string, level int, d time.Duration, ns string) Operator {
		return Operator{Name: name, RunLevel: level, Duration: d, Namespace: ns}
	}
	cpms := op(ControlPlaneMachineSet, 30, 1*m, "openshift-machine-api")
	cpms.Deployment = CPMSOperatorDeployment
	return []Operator{
		op("config-operator", 3, 1*m, "openshift-config-operator"),
		op("etcd", 12, 6*m, "openshift-etcd"),
		op("kube-apiserver", 20, 10*m, "openshift-kube-apiserver"),
		op("kube-controller-manager", 25, 5*m, "openshift-kube-controller-manager"),
		op("kube-scheduler", 25, 4*m, "openshift-kube-scheduler"),
		op("cloud-controller-manager", 26, 2*m, "openshift-cloud-controller-manager"),
		op("openshift-apiserver", 30, 4*m, "openshift-apiserver"),
		op("machine-api", 30, 2*m, "openshift-machine-api"),
		cpms,
		op("cloud-credential", 30, 1*m, "openshift-cloud-credential-operator"),
		op("kube-storage-version-migrator", 40, 1*m, "openshift-kube-storage-version-migrator"),
		op("authentication", 50, 4*m, "openshift-authentication"),
		op("baremetal", 50, 1*m, "openshift-machine-api"),
		op("cluster-autoscaler", 50, 1*m, "openshift-machine-api"),
		op("console", 50, 2*m, "openshift-console"),
		op("csi-snapshot-controller", 50, 1*m, "openshift-cluster-storage-operator"),
		op("image-registry", 50, 2*m, "openshift-image-registry"),
		op("ingress", 50, 3*m, "openshift-ingress"),
		op("insights", 50, 1*m, "openshift-insights"),
		op("machine-approver", 50, 1*m, "openshift-cluster-machine-approver"),
		op("marketplace", 50, 1*m, "openshift-marketplace"),
		op("monitoring", 50, 4*m, "openshift-monitoring"),
		op("node-tuning", 50, 2*m, "openshift-cluster-node-tuning-operator"),
		op("openshift-controller-manager", 50, 2*m, "openshift-controller-manager"),
		op("openshift-samples", 50, 1*m, "openshift-cluster-samples-operator"),
		op("operator-lifecycle-manager", 50, 1*m, "openshift-operator-lifecycle-manager"),
		op("operator-lifecycle-manager-catalog", 50, 1*m, "openshift-operator-lifecycle-manager"),
		op("operator-lifecycle-manager-packageserver", 50, 1*m, "openshift-operator-lifecycle-manager"),
		op("service-ca", 50, 1*m, "openshift-service-ca-operator"),
		op("storage", 50, 2*m, "openshift-cluster-storage-operator"),
		op("network", 70, 6*m, "openshift-network-operator"),
		op("dns", 70, 2*m, "openshift-dns"),
		op(MachineConfig, 80, 2*m, "openshift-machine-config-operator"),
	}
}

// Levels groups operators by run level, in ascending order.
func Levels(ops []Operator) [][]Operator {
	sorted := append([]Operator(nil), ops...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].RunLevel != sorted[j].RunLevel {
			return sorted[i].RunLevel < sorted[j].RunLevel
		}
		return sorted[i].Name < sorted[j].Name
	})
	var out [][]Operator
	for i, op := range sorted {
		if i == 0 || op.RunLevel != sorted[i-1].RunLevel {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], op)
	}
	return out
}

// CurrentLevel returns the index of the first level with an operator not yet
// at the target version (done reports per operator), or len(levels) when the
// payload is fully applied.
func CurrentLevel(levels [][]Operator, done func(name string) bool) int {
	for i, l := range levels {
		for _, op := range l {
			if !done(op.Name) {
				return i
			}
		}
	}
	return len(levels)
}

// Target is a validated update target.
type Target struct {
	Version, Image string
	Verified       bool // a signed release: from the update service's graph or availableUpdates
	// AcceptedRisks is what the update accepts (history acceptedRisks):
	// here, that an unverifiable image was forced.
	AcceptedRisks string
}

// InvalidError is a desiredUpdate the CVO's validation refuses (the
// ClusterVersion is Invalid).
type InvalidError struct{ Msg string }

func (e *InvalidError) Error() string { return e.Msg }

// RetrieveError is a valid desiredUpdate whose release the CVO cannot
// retrieve or verify (ReleaseAccepted=False, RetrievePayload).
type RetrieveError struct{ Msg string }

func (e *RetrieveError) Error() string { return e.Msg }

// Validate checks desiredUpdate as the CVO does. Without an image the
// version must be an available update or a previous version (conditional
// updates are requested with their image, as oc adm upgrade
// --allow-not-recommended does). With an image, the CVO retrieves the
// release and verifies its signature: a release of the update service's
// graph (or one already listed in status) is signed, so it is accepted by
// digest alone and its version comes from the graph; any other image is
// refused unless force is set.
func Validate(du *configv1.Update, st *configv1.ClusterVersionStatus, g Graph) (Target, error) {
	if du == nil || (du.Version == "" && du.Image == "") {
		return Target{}, &InvalidError{"spec.desiredUpdate: Required value: must specify version or image"}
	}
	if du.Image == "" {
		for _, r := range st.AvailableUpdates {
			if r.Version == du.Version {
				return Target{Version: r.Version, Image: r.Image, Verified: true}, nil
			}
		}
		for _, h := range st.History {
			if h.Version == du.Version && h.Image != "" {
				return Target{Version: h.Version, Image: h.Image, Verified: h.Verified}, nil
			}
		}
		return Target{}, &InvalidError{fmt.Sprintf("spec.desiredUpdate.version: Invalid value: %q: when image is empty the update must be a previous version or an available update", du.Version)}
	}
	version, known := knownImage(du.Image, st, g)
	if known {
		if du.Version != "" && du.Version != version {
			return Target{}, &InvalidError{fmt.Sprintf("spec.desiredUpdate.version: Invalid value: %q: version does not match the release image %s (version %s)", du.Version, du.Image, version)}
		}
		return Target{Version: version, Image: du.Image, Verified: true}, nil
	}
	verr := "release image " + du.Image + " is not in the available updates and force is not set"
	if _, digest, ok := strings.Cut(du.Image, "@"); ok {
		// The CVO's signature verifier, for a digest no trusted key has signed.
		verr = "unable to verify " + digest + " against keyrings: verifier-public-key-redhat"
	}
	if !du.Force {
		return Target{}, &RetrieveError{"The update cannot be verified: " + verr}
	}
	v := du.Version
	if v == "" {
		v = VersionFromImage(du.Image)
	}
	return Target{Version: v, Image: du.Image,
		AcceptedRisks: fmt.Sprintf("Target release version=%q image=%q cannot be verified, but continuing anyway because the update was forced: %s", du.Version, du.Image, verr)}, nil
}

// knownImage finds the version of a signed release image: one of the graph,
// or one the CVO already lists (updates, conditional updates, verified history).
func knownImage(image string, st *configv1.ClusterVersionStatus, g Graph) (string, bool) {
	if r, ok := g.ByImage(image); ok {
		return r.Version, true
	}
	for _, r := range st.AvailableUpdates {
		if r.Image == image {
			return r.Version, true
		}
	}
	for _, c := range st.ConditionalUpdates {
		if c.Release.Image == image {
			return c.Release.Version, true
		}
	}
	for _, h := range st.History {
		if h.Image == image && h.Verified {
			return h.Version, true
		}
	}
	return "", false
}

// VersionFromImage guesses the version from a release image tag
// (quay.io/openshift-release-dev/ocp-release:4.16.3-x86_64 → 4.16.3).
func VersionFromImage(image string) string {
	if i := strings.LastIndex(image, ":"); i >= 0 && !strings.Contains(image[i:], "/") {
		tag := image[i+1:]
		tag = strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(tag, "-x86_64"), "-multi"), "-aarch64")
		if _, ok := parseVersion(tag); ok {
			return tag
		}
	}
	return "0.0.0-unknown"
}

// MCOImage is the machine-config-operator image of a release: the MCO
// Deployment runs it, and the machine-config ClusterOperator reports it as
// its operator-image version once the MCO of that release has synced. A
// release's component images are digests in the release's art-dev
// repository; here the digest is derived from the release image, so each
// release (and each image of one version, as in a multi-arch migration) has
// its own.
func MCOImage(releaseImage string) string {
	return ComponentImage("machine-config-operator", releaseImage)
}

// ComponentImage is the image of a component of a release (art-dev
// repository, digest derived from the component and the release image).
// The CVO rolls an operator's Deployment out with the image named after
// the Deployment.
func ComponentImage(component, releaseImage string) string {
	sum := sha256.Sum256([]byte(component + "\x00" + releaseImage))
	return "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:" + hex.EncodeToString(sum[:])
}

// CPMSOperatorImage is the control-plane-machine-set operator's image of a
// release.
func CPMSOperatorImage(releaseImage string) string {
	return ComponentImage(CPMSOperatorDeployment.Name, releaseImage)
}

// ReleaseVersionEnv is the environment variable through which a release's
// operator Deployment tells the operator which version to report.
const ReleaseVersionEnv = "RELEASE_VERSION"

// MCO Deployment: where the machine-config operator runs, and its container.
const (
	MCONamespace  = "openshift-machine-config-operator"
	MCODeployment = "machine-config-operator"
	MCOContainer  = "machine-config-operator"
)

func parseVersion(s string) ([3]int, bool) {
	var v [3]int
	parts := strings.SplitN(strings.SplitN(s, "-", 2)[0], ".", 3)
	if len(parts) != 3 {
		return v, false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil {
			return v, false
		}
		v[i] = n
	}
	return v, true
}

// Less orders x.y.z versions numerically.
func Less(a, b string) bool {
	va, oka := parseVersion(a)
	vb, okb := parseVersion(b)
	if !oka || !okb {
		return a < b
	}
	for i := range va {
		if va[i] != vb[i] {
			return va[i] < vb[i]
		}
	}
	return false
}

// ProgressMessage is the CVO's Progressing message while it applies the payload.
func ProgressMessage(version string, done, total int, waiting []string) string {
	pct := 0
	if total > 0 {
		pct = done * 100 / total
	}
	msg := fmt.Sprintf("Working towards %s: %d of %d done (%d%% complete)", version, done, total, pct)
	if len(waiting) > 0 {
		sort.Strings(waiting)
		msg += ", waiting on " + strings.Join(waiting, ", ")
	}
	return msg
}
