package testenv

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"

	httptransport "github.com/go-openapi/runtime/client"
	"github.com/go-openapi/strfmt"
	amclient "github.com/prometheus/alertmanager/api/v2/client"
)

// AlertmanagerBinary is the Alertmanager binary `make testbin` builds, named with
// its version (the Makefile's ALERTMANAGER_VERSION, from the builder module
// tools/build/alertmanager; TestAlertmanagerBinaryMatchesBuilder keeps the
// two in step).
const AlertmanagerBinary = "alertmanager-v0.31.1"

// alertmanagerConfig routes every alert to a receiver that sends nothing:
// tests use Alertmanager for its API (alerts, silences), not for delivery.
const alertmanagerConfig = `route:
  receiver: "null"
receivers:
- name: "null"
`

// Alertmanager is a running Alertmanager, a child of the test process.
type Alertmanager struct {
	// URL is the base URL, in front of /api/v2.
	URL string
	// Dir holds its configuration, storage and log.
	Dir string

	child   *child
	ownsDir bool
	// path and args start it again (Restart).
	path     string
	args     []string
	restarts int
}

// StartAlertmanager starts a single Alertmanager (no cluster peers) on a free
// loopback port, with a null receiver, and waits for it to be ready. Stop it
// with Stop; a Pdeathsig kills it if the test process dies first. dir is where
// its files go; empty means a new temporary folder that Stop removes.
func StartAlertmanager(ctx context.Context, dir string) (_ *Alertmanager, retErr error) {
	binDir, err := TestBinDir()
	if err != nil {
		return nil, err
	}
	if err := requireFiles(binDir, AlertmanagerBinary); err != nil {
		return nil, err
	}
	am := &Alertmanager{Dir: dir}
	if dir == "" {
		if am.Dir, err = os.MkdirTemp("", "upshift-alertmanager-"); err != nil {
			return nil, err
		}
		am.ownsDir = true
	}
	defer func() {
		if retErr != nil {
			am.Stop()
		}
	}()
	amDir := filepath.Join(am.Dir, "alertmanager")
	if err := os.MkdirAll(filepath.Join(amDir, "data"), 0o755); err != nil {
		return nil, err
	}
	cfg := filepath.Join(amDir, "alertmanager.yml")
	if err := os.WriteFile(cfg, []byte(alertmanagerConfig), 0o600); err != nil {
		return nil, err
	}
	addr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	am.URL = "http://" + addr
	am.path = filepath.Join(binDir, AlertmanagerBinary)
	am.args = []string{
		"--config.file=" + cfg,
		"--storage.path=" + filepath.Join(amDir, "data"),
		"--web.listen-address=" + addr,
		// No gossip: a lone instance, and no second port to collide on.
		"--cluster.listen-address=",
	}
	if err := am.start(ctx, "alertmanager"); err != nil {
		return nil, err
	}
	return am, nil
}

// start runs the binary and waits until it is ready; its output goes to
// <Dir>/<name>.log.
func (a *Alertmanager) start(ctx context.Context, name string) error {
	var err error
	if a.child, err = startChild(a.Dir, name, a.path, a.args...); err != nil {
		return err
	}
	httpc := &http.Client{Timeout: 2 * time.Second}
	return waitFor(ctx, 60*time.Second, "alertmanager to become ready", func() (bool, error) {
		if err := a.child.exited(); err != nil {
			return false, err
		}
		resp, err := httpc.Get(a.URL + "/-/ready")
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, fmt.Errorf("alertmanager /-/ready answered %s", resp.Status)
	})
}

// Restart stops Alertmanager (SIGTERM: it writes its silences to its
// storage, as a pod being replaced does) and starts it again on the same
// address and storage, so that clients keep their URL and the silences
// survive; requests meanwhile fail, as during a rollout of a lone instance.
// It returns when the new process is ready.
func (a *Alertmanager) Restart(ctx context.Context) error {
	a.child.stop(5 * time.Second)
	a.restarts++
	return a.start(ctx, fmt.Sprintf("alertmanager-%d", a.restarts))
}

// Stop stops Alertmanager and removes its folder if StartAlertmanager made it.
// It is safe to call more than once.
func (a *Alertmanager) Stop() {
	if a.child != nil {
		a.child.stop(5 * time.Second)
	}
	if a.ownsDir {
		_ = os.RemoveAll(a.Dir)
	}
}

// API is a client of its API v2, Alertmanager's own generated client, for a
// test that posts alerts and silences as Prometheus and people would.
func (a *Alertmanager) API() (*amclient.AlertmanagerAPI, error) {
	u, err := url.Parse(a.URL)
	if err != nil {
		return nil, err
	}
	return amclient.New(httptransport.New(u.Host, amclient.DefaultBasePath, []string{u.Scheme}), strfmt.Default), nil
}
