package assess

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/upshift-io/upshift/libs/gating"
)

// What the assessment reads of a Node, and nothing else: its name and UID,
// all its labels (pool node selectors can match any label), these
// annotations, spec.unschedulable, and these conditions (type, status,
// reason, message, lastTransitionTime). The controller's cache keeps only
// this much of each Node and reacts only to changes of it, so anything the
// assessment starts reading must be listed here.
var (
	NodeAnnotations = []string{
		annoCurrentConfig, annoDesiredConfig, annoState, annoReason,
		annoDesiredDrain, annoLastAppliedDrain, annoCurrentImage, annoDesiredImage,
		// node-gate's mark on a node it released (gates.go).
		gating.ReleasedAnnotation,
	}
	NodeConditions = []corev1.NodeConditionType{
		corev1.NodeReady, corev1.NodeDiskPressure, corev1.NodeNetworkUnavailable,
	}
)
