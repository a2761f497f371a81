package optionalkind

import (
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NotServed says whether err is the NotFound of a resource the server does
// not serve (its CRD is not installed) rather than of an object, for a
// client that does not ask discovery first (a CLI with a fixed REST
// mapping). A resource unknown in a served group gets a Status that names
// no object; a path no API serves gets a plain-text 404, which the client
// reports as an unexpected response.
func NotServed(err error) bool {
	var status apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &status) {
		return false
	}
	d := status.Status().Details
	if d == nil || d.Name == "" {
		return true
	}
	for _, c := range d.Causes {
		if c.Type == metav1.CauseTypeUnexpectedServerResponse {
			return true
		}
	}
	return false
}
