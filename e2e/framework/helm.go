package framework

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/upshift-io/upshift/libs/testenv"
)

// Helm runs the real helm binary against one cluster, with its own config,
// cache and data folders so a test neither reads nor changes the user's.
type Helm struct {
	Binary     string
	Kubeconfig string
	Home       string
}

// NewHelm returns a Helm for the cluster behind kubeconfig, keeping its
// state under home.
func NewHelm(kubeconfig, home string) (*Helm, error) {
	bin, err := helmBinary()
	if err != nil {
		return nil, err
	}
	return &Helm{Binary: bin, Kubeconfig: kubeconfig, Home: home}, nil
}

// Run runs helm with args and returns its standard output; the error
// carries standard error.
func (h *Helm) Run(args ...string) (string, error) {
	cmd := exec.Command(h.Binary, args...)
	cmd.Env = append(os.Environ(),
		"KUBECONFIG="+h.Kubeconfig,
		"HELM_CONFIG_HOME="+filepath.Join(h.Home, "config"),
		"HELM_CACHE_HOME="+filepath.Join(h.Home, "cache"),
		"HELM_DATA_HOME="+filepath.Join(h.Home, "data"),
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// ChartDirs lists the chart folders under <repo>/charts: the component
// charts (no dependencies) and the umbrella charts (with dependencies), by
// folder name.
func ChartDirs() (components, umbrellas []string, err error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return nil, nil, err
	}
	matches, err := filepath.Glob(filepath.Join(root, "charts", "*", "Chart.yaml"))
	if err != nil {
		return nil, nil, err
	}
	for _, m := range matches {
		raw, err := os.ReadFile(m)
		if err != nil {
			return nil, nil, err
		}
		name := filepath.Base(filepath.Dir(m))
		if bytes.Contains(raw, []byte("\ndependencies:")) {
			umbrellas = append(umbrellas, name)
		} else {
			components = append(components, name)
		}
	}
	return components, umbrellas, nil
}
