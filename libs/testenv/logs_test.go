package testenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A control plane that fails to start is quoted from its own output: the
// end of each file, etcd's first.
func TestControlPlaneTail(t *testing.T) {
	e := &Env{Dir: t.TempDir()}
	if got := e.controlPlaneTail(); got != "" {
		t.Fatalf("no output yet, got %q", got)
	}
	long := strings.Repeat("x", 5000) + "\nE1207 run.go:72] \"command failed\" err=\"listen tcp 127.0.0.1:6443: bind: address already in use\"\n"
	if err := os.WriteFile(filepath.Join(e.Dir, apiServerLog), []byte(long), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.Dir, etcdLog), []byte("etcd ready\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got := e.controlPlaneTail()
	if !strings.Contains(got, "address already in use") || !strings.Contains(got, "etcd ready") {
		t.Fatalf("tail %q: want the end of both outputs", got)
	}
	if strings.Index(got, "etcd.log") > strings.Index(got, "kube-apiserver.log") {
		t.Fatalf("tail %q: want etcd's first", got)
	}
	if len(got) > 3200 {
		t.Fatalf("tail of %d bytes: want only the end of a long output", len(got))
	}
}
