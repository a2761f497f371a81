package etcd

import (
	"reflect"
	"testing"
)

func TestHookDecision(t *testing.T) {
	cases := []struct {
		name    string
		ms      []Member
		desired int
		want    Decision
	}{
		{"machine api not functional yet", []Member{{Name: "a"}, {Name: "b"}}, 3, Decision{}},
		{"adds hook to every non-deleting machine, even provisioning", []Member{
			{Name: "a", Running: true, Voting: true, HasHook: true}, {Name: "b", Running: true, Voting: true}, {Name: "new"},
		}, 3, Decision{AddHook: []string{"b", "new"}}},
		{"never re-adds to a deleting machine", []Member{
			{Name: "a", Running: true, Voting: true, HasHook: true}, {Name: "old", Deleting: true, Running: true},
		}, 3, Decision{}},
		{"keeps the hook until a replacement votes", []Member{
			{Name: "a", Running: true, Voting: true, HasHook: true}, {Name: "b", Running: true, Voting: true, HasHook: true},
			{Name: "old", Running: true, Voting: true, HasHook: true, Deleting: true}, {Name: "new", Running: true, HasHook: true},
		}, 3, Decision{}},
		{"keeps the hook until the old member's removal is due", []Member{
			{Name: "a", Running: true, Voting: true, HasHook: true}, {Name: "b", Running: true, Voting: true, HasHook: true},
			{Name: "old", Running: true, Voting: true, HasHook: true, Deleting: true}, {Name: "new", Running: true, Voting: true, HasHook: true},
		}, 3, Decision{}},
		{"releases once the replacement votes and the removal is due", []Member{
			{Name: "a", Running: true, Voting: true, HasHook: true}, {Name: "b", Running: true, Voting: true, HasHook: true},
			{Name: "old", Running: true, Voting: true, HasHook: true, Deleting: true, RemovalDue: true}, {Name: "new", Running: true, Voting: true, HasHook: true},
		}, 3, Decision{RemoveHook: []string{"old"}}},
	}
	for _, c := range cases {
		if got := HookDecision(c.ms, c.desired); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %+v want %+v", c.name, got, c.want)
		}
	}
}
