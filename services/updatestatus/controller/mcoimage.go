package controller

import (
	"context"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/upshift-io/upshift/services/updatestatus/assess"
)

// mcoImageMaxAge bounds how long a read of the MCO Deployment's image is
// trusted while the machine-config ClusterOperator does not change; a read
// that failed for another reason than the Deployment's absence is retried
// sooner.
const (
	mcoImageMaxAge     = 10 * time.Minute
	mcoImageRetryAfter = 30 * time.Second
)

// mcoImageRead is the last read of the MCO Deployment's image.
type mcoImageRead struct {
	coVersion string // resourceVersion of the machine-config ClusterOperator when read
	at        time.Time
	image     string
	known     bool
	problem   string // why it is unknown, for the log
	transient bool   // the read failed (not: the Deployment is absent)
}

func (m *mcoImageRead) maxAge() time.Duration {
	if m.transient {
		return mcoImageRetryAfter
	}
	return mcoImageMaxAge
}

// mcoImage returns the image of the machine-config-operator Deployment, and
// whether it is known, for the assessment's multi-arch check.
//
// The Deployment is read with one GET by name (RBAC grants that one name
// only), not through an informer: a watch on Deployments would be
// cluster-wide or need a namespace-scoped cache for one object. Not being
// watched, it is re-read when the machine-config ClusterOperator changes
// (it is watched): the image only matters compared with the operator-image
// version that operator reports, and a new MCO image goes with a change of
// that ClusterOperator — the CVO rolls out the new Deployment, the new MCO
// pod then flips Progressing and finally reports its operator-image. A read
// older than mcoImageMaxAge is refreshed anyway, in case the Deployment moved
// while the operator stayed silent. The image is not read at all while the
// operator reports no operator-image version: then nothing compares with it.
//
// Unknown (the Deployment is missing, has no MCO container, or cannot be
// read) is not an error: the assessment then does not make the check.
func (r *Reconciler) mcoImage(ctx context.Context, cos []configv1.ClusterOperator) (string, bool) {
	var mco *configv1.ClusterOperator
	for i := range cos {
		if cos[i].Name == "machine-config" {
			mco = &cos[i]
		}
	}
	if mco == nil || !reportsOperatorImage(mco) {
		return "", false
	}
	now := r.Clock.Now()
	if last := r.lastMCOImage; last != nil && last.coVersion == mco.ResourceVersion && now.Sub(last.at) < last.maxAge() {
		return last.image, last.known
	}
	read := &mcoImageRead{coVersion: mco.ResourceVersion, at: now}
	d := &appsv1.Deployment{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: assess.MCONamespace, Name: assess.MCODeployment}, d); err != nil {
		read.problem = "cannot read the machine-config-operator Deployment: " + err.Error()
		read.transient = !apierrors.IsNotFound(err)
	} else if read.image, read.known = assess.DeploymentMCOImage(d); !read.known {
		read.problem = "the machine-config-operator Deployment has no container " + assess.MCOContainer
	}
	if last := r.lastMCOImage; last == nil || last.known != read.known || last.image != read.image || last.problem != read.problem {
		logger := log.FromContext(ctx)
		if read.known {
			logger.Info("machine-config-operator image", "image", read.image)
		} else {
			logger.Info("machine-config-operator image unknown: machine-config counts as updated on its version alone", "reason", read.problem)
		}
	}
	r.lastMCOImage = read
	return read.image, read.known
}

func reportsOperatorImage(co *configv1.ClusterOperator) bool {
	for _, v := range co.Status.Versions {
		if v.Name == "operator-image" {
			return true
		}
	}
	return false
}
