package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// run executes the command tree with args and returns stdout, stderr and the error.
func run(args ...string) (string, string, error) {
	var out, errOut bytes.Buffer
	cmd := newRootCommand(genericiooptions.IOStreams{Out: &out, ErrOut: &errOut})
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), errOut.String(), err
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, _, err := run(args...)
		if err != nil || !strings.HasPrefix(out, "kubectl-upshift ") || strings.Count(out, "\n") != 1 {
			t.Errorf("%v: out %q, err %v", args, out, err)
		}
	}
}

// The mock mode through the real flags: the output is oc's own for one of
// its examples (copied into the cli package's test data), and no kubeconfig
// is needed.
func TestStatusMock(t *testing.T) {
	examples := filepath.Join("..", "..", "services", "updatestatus", "cli", "testdata", "oc")
	want, err := os.ReadFile(filepath.Join(examples, "4.14.1-degraded.detailed-output"))
	if err != nil {
		t.Fatal(err)
	}
	cvFile := filepath.Join(examples, "4.14.1-degraded-cv.yaml")
	out, _, err := run("status", "--details=all", "--kubeconfig=/nonexistent", "--mock-clusterversion="+cvFile)
	// The snapshot has no alerts file: oc says so on stdout before the report.
	notice := "Unable to fetch alerts, ignoring alerts in 'Update Health':  open " +
		strings.TrimSuffix(cvFile, "-cv.yaml") + "-alerts.json: no such file or directory\n"
	if err != nil || out != notice+string(want) {
		t.Errorf("err %v, output:\n%s", err, out)
	}
}

func TestStatusErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"status", "--details=verbose"}, `invalid --details value "verbose": must be one of none, all, nodes, health, operators`},
		{[]string{"status", "--mock-clusterversion=/nonexistent/x-cv.yaml"}, "/nonexistent/x-cv.yaml: snapshot file is missing"},
		{[]string{"status", "extra"}, `unknown command "extra"`},
		{[]string{"status", "-o", "wide"}, `invalid --output value "wide": must be one of json, yaml`},
		{[]string{"status", "-w", "--mock-clusterversion=x-cv.yaml"}, "--watch needs a cluster"},
		{[]string{"status", "--source=cache"}, `invalid --source value "cache": must be one of auto, controller, client`},
		{[]string{"status", "--source=client", "--mock-clusterversion=x-cv.yaml"}, "--source=client reads a cluster"},
		{[]string{"status", "-w", "--source=client", "--kubeconfig=/nonexistent"}, "--watch needs the update-status-controller's status (--source=client)"},
	} {
		_, _, err := run(tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want it to contain %q", tc.args, err, tc.want)
		}
	}
}

// -o through the real flags prints the assessed objects.
func TestStatusMockOutput(t *testing.T) {
	cvFile := filepath.Join("..", "..", "services", "updatestatus", "cli", "testdata", "pdb-drain-cv.yaml")
	for _, args := range [][]string{{"-o", "json"}, {"--output=yaml"}} {
		out, _, err := run(append([]string{"status", "--mock-clusterversion=" + cvFile}, args...)...)
		if err != nil || !strings.Contains(out, "UpgradeStatus") || !strings.Contains(out, "NodeProgressInsight") {
			t.Errorf("%v: err %v, output:\n%s", args, err, out)
		}
	}
}

// The flags of cpms generate; reading a cluster is services/cpms's suite's.
func TestCPMSGenerateErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"cpms", "generate", "-o", "wide", "--kubeconfig=/nonexistent"}, `invalid --output value "wide": must be one of yaml, json`},
		{[]string{"cpms", "generate", "extra"}, `unknown command "extra"`},
		{[]string{"cpms", "generate", "--kubeconfig=/nonexistent"}, "/nonexistent"},
	} {
		_, _, err := run(tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want it to contain %q", tc.args, err, tc.want)
		}
	}
}

// The flags of must-gather; what it gathers is e2e/mustgather's.
func TestMustGatherErrors(t *testing.T) {
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "summary.txt"), []byte("an earlier archive"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A kubeconfig that parses; nothing is asked of its server before the
	// folder is checked.
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
		{[]string{"must-gather", "extra"}, `unknown command "extra"`},
		{[]string{"must-gather", "--kubeconfig=/nonexistent"}, "/nonexistent"},
		{[]string{"must-gather", "--kubeconfig=" + kubeconfig, "--dest-dir=" + full}, "destination " + full + " is not empty: choose a new folder"},
	} {
		_, _, err := run(tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want it to contain %q", tc.args, err, tc.want)
		}
	}
}
