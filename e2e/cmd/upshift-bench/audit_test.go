package main

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/upshift-io/upshift/libs/testenv"
)

func TestCountWrites(t *testing.T) {
	log := `{"verb":"patch","user":{"username":"system:serviceaccount:upshift-gate:ngate-node-gate"},"objectRef":{"resource":"nodes"},"stageTimestamp":"2026-12-02T07:00:01.000001Z"}
{"verb":"patch","user":{"username":"system:serviceaccount:upshift-gate:ngate-node-gate"},"objectRef":{"resource":"nodes"},"stageTimestamp":"2026-12-02T07:00:02Z"}
{"verb":"get","user":{"username":"system:serviceaccount:upshift-gate:ngate-node-gate"},"objectRef":{"resource":"nodes"},"stageTimestamp":"2026-12-02T07:00:02Z"}
{"verb":"watch","user":{"username":"admin"},"objectRef":{"resource":"nodes"},"stageTimestamp":"2026-12-02T07:00:02Z"}
{"verb":"update","user":{"username":"admin"},"objectRef":{"resource":"nodes","subresource":"status"},"stageTimestamp":"2026-12-02T07:00:03Z"}
{"verb":"create","user":{"username":"admin"},"objectRef":{"resource":"jobs"},"stageTimestamp":"2026-12-02T07:00:09Z"}
{"verb":"create","user":{"username":"admin"},"stageTimestamp":"2026-12-02T07:00:03Z"}
{"verb":"patch","user":{"username":"admin"},"objectRef":{"resource":"nodes"}`
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	from := time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC)
	got, err := countWrites(&testenv.Env{AuditLogPath: path}, from, from.Add(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	// Reads and watches, requests without an
	// object, what ended after the window and the line still being written
	// are left out.
	want := clientWrites{"upshift-gate/ngate-node-gate: patch nodes": 2, "admin: update nodes/status": 1}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("countWrites = %v, want %v", got, want)
	}
}
