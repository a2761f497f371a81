package testenv

import (
	"context"
	"fmt"
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
// behind.
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
	select {
	case <-time.After(opts.Down):
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := api.Start(); err != nil {
		return fmt.Errorf("starting kube-apiserver again: %w", err)
	}
	// The watchdog must know the new process.
	return e.armWatchdog()
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
