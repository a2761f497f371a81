package testenv

// Writes counts the patches and updates in evs of the given resource and
// subresource ("" for the object itself): how a suite proves that something
// was written exactly so many times, or never.
func Writes(evs []AuditEvent, resource, subresource string) int {
	n := 0
	for _, e := range evs {
		if (e.Verb == "patch" || e.Verb == "update") && e.ObjectRef != nil &&
			e.ObjectRef.Resource == resource && e.ObjectRef.Subresource == subresource {
			n++
		}
	}
	return n
}
