package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func run(args ...string) (string, error) {
	var out bytes.Buffer
	cmd := newCommand()
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	err := cmd.Execute()
	return out.String(), err
}

func TestVersion(t *testing.T) {
	out, err := run("--version")
	if err != nil || !strings.HasPrefix(out, binaryName+" ") {
		t.Errorf("out %q, err %v", out, err)
	}
}

// oc's contract: no arguments, output into /must-gather; here the folder is
// given and must be empty.
func TestErrors(t *testing.T) {
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
users: [{name: u, user: {token: t}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"extra"}, `unknown command "extra"`},
		{[]string{"--kubeconfig=" + kubeconfig, "--dest-dir=" + full}, "is not empty"},
	} {
		_, err := run(tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want it to contain %q", tc.args, err, tc.want)
		}
	}
	if cmd := newCommand(); cmd.Flags().Lookup("dest-dir").DefValue != "/must-gather" {
		t.Errorf("--dest-dir defaults to %q, want /must-gather (where oc copies from)", cmd.Flags().Lookup("dest-dir").DefValue)
	}
}
