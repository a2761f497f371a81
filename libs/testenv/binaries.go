package testenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// EnvTestBin names the folder holding the control-plane binaries. `make
// testbin` builds them and the Makefile exports this variable for `make test`;
// without it, Start looks in <repo>/bin/testbin/current.
const EnvTestBin = "UPSHIFT_TESTBIN"

// The files Start needs in the testbin folder.
const (
	binEtcd              = "etcd"
	binAPIServer         = "kube-apiserver"
	binControllerManager = "kube-controller-manager"
	binScheduler         = "kube-scheduler"
	binKwok              = "kwok"
	fileKwokStages       = "kwok-stages.yaml"
	fileKwokLeaseStages  = "kwok-stages-lease.yaml"
)

// TestBinDir returns the folder with the control-plane binaries, or an error
// that tells the reader how to build them.
func TestBinDir() (string, error) {
	if dir := os.Getenv(EnvTestBin); dir != "" {
		return dir, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", fmt.Errorf("%s is not set and %w", EnvTestBin, err)
	}
	return filepath.Join(root, "bin", "testbin", "current"), nil
}

func requireFiles(dir string, names ...string) error {
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			return fmt.Errorf("test control plane incomplete: %s missing in %s; run `make testbin`", n, dir)
		}
	}
	return nil
}

// RepoRoot walks up from the working directory to the folder holding go.work.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.work found above the working directory")
		}
		dir = parent
	}
}
