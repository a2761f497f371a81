package testenv

import "testing"

func TestWrites(t *testing.T) {
	ev := func(verb, resource, sub string) AuditEvent {
		e := AuditEvent{Verb: verb, ObjectRef: &AuditObjectRef{Resource: resource, Subresource: sub}}
		return e
	}
	evs := []AuditEvent{
		ev("patch", "nodes", ""), ev("update", "nodes", ""), ev("get", "nodes", ""), ev("patch", "nodes", "status"),
		ev("patch", "pods", ""), {Verb: "patch"},
	}
	if got := Writes(evs, "nodes", ""); got != 2 {
		t.Fatalf("node writes %d, want 2", got)
	}
	if got := Writes(evs, "nodes", "status"); got != 1 {
		t.Fatalf("node status writes %d, want 1", got)
	}
}
