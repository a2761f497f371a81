package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// RestartOptions shape a kube-apiserver restart.
type RestartOptions struct {
	// Down is how long the apiserver stays stopped before it starts again:
	// long enough for clients to notice (their watches end, their requests
	// fail), as when a real control-plane node reboots.
	Down time.Duration
	// CompactHistory compacts etcd's history up to its current revision
	// while the apiserver is down, as the apiserver's own periodic
	// compaction (every five minutes by default) does to a cluster whose
	// apiserver stays away longer than that. Every watch that resumes from a
	// resourceVersion of before the restart is then told 410 Gone, at once
	// and whichever way the new apiserver serves it (from etcd, or from its
	// watch cache), and lists again.
	CompactHistory bool
}

// RestartAPIServer kills kube-apiserver (SIGKILL, as a crash or a node
// losing power would: every connection drops at once) and starts it again on
// the same address, with the same certificates, users and service-account
// signing key, so that every client and ServiceAccount token keeps working
// once it is back; etcd, and so every object, stays. It returns when the new
// apiserver is healthy.
//
// The new apiserver's watch cache starts at etcd's current revision, so a
// client that resumes a watch from a resourceVersion older than that (any
// object changed while it was down, or since the client last heard) gets
// 410 Gone and lists again: the path informers take when they fall too far
// behind. Until that cache is filled, though, the apiserver may serve such a
// watch from etcd, which still has the revisions; CompactHistory removes
// them, so that every resumed watch is expired.
func (e *Env) RestartAPIServer(ctx context.Context, opts RestartOptions) error {
	pids, err := childPIDs(binAPIServer)
	if err != nil {
		return err
	}
	if len(pids) != 1 {
		return fmt.Errorf("expected one kube-apiserver process, found %d", len(pids))
	}
	if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
		return fmt.Errorf("killing kube-apiserver: %w", err)
	}
	// Stop now only reaps the process and releases envtest's state.
	api := e.envtest.ControlPlane.GetAPIServer()
	if err := api.Stop(); err != nil {
		return fmt.Errorf("stopping kube-apiserver: %w", err)
	}
	if opts.CompactHistory {
		if err := e.compactEtcd(ctx); err != nil {
			return fmt.Errorf("compacting etcd while kube-apiserver is down: %w", err)
		}
	}
	select {
	case <-time.After(opts.Down):
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := api.Start(); err != nil {
		return fmt.Errorf("starting kube-apiserver again: %w%s", err, e.controlPlaneTail())
	}
	// The watchdog must know the new process.
	return e.armWatchdog()
}

// compactEtcd compacts etcd's history up to its current revision through
// etcd's JSON gateway (its v3 API over HTTP on the client address), which
// needs no etcd client library. Only the apiserver writes to etcd, and it is
// down, so the revision read is the last one.
func (e *Env) compactEtcd(ctx context.Context) error {
	base := e.envtest.ControlPlane.Etcd.URL.String()
	// A count-only range of one key answers with the store's revision in
	// its header; the gateway spells 64-bit integers as strings.
	var read struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
	}
	if err := etcdCall(ctx, base+"/v3/kv/range", map[string]any{"key": []byte("/"), "count_only": true}, &read); err != nil {
		return err
	}
	if read.Header.Revision == "" {
		return fmt.Errorf("etcd's range answer carries no revision")
	}
	return etcdCall(ctx, base+"/v3/kv/compaction", map[string]any{"revision": read.Header.Revision, "physical": true}, nil)
}

// etcdCall posts body to one of etcd's gateway endpoints and decodes the
// answer into out (when not nil).
func etcdCall(ctx context.Context, url string, body, out any) error {
	payload, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("etcd %s: %s: %s", url, resp.Status, answer)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(answer, out)
}

// keepAPIServerCerts gives the apiserver a certificate folder of Env's own
// (envtest's default is a temporary folder it deletes on Stop), so that a
// restart finds the serving certificate, the client CA and the
// service-account key it started with.
func (e *Env) keepAPIServerCerts() error {
	dir := filepath.Join(e.Dir, "kube-apiserver")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	e.envtest.ControlPlane.GetAPIServer().CertDir = dir
	return nil
}
