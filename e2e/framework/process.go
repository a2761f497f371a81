package framework

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/upshift-io/upshift/libs/testenv"
)

// Component is a binary running in its own process, its output captured.
type Component struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan error
	// exited is closed when the process has ended, however it ended.
	exited chan struct{}

	stopOnce sync.Once
	stopErr  error
}

// StartComponent runs path with args.
func StartComponent(path string, args ...string) (*Component, error) {
	return StartComponentEnv(nil, path, args...)
}

// StartComponentEnv runs path with args and, besides the test's own
// environment, env ("KEY=value"): what a chart sets through the downward
// API or its values (NODE_NAME, a proxy).
func StartComponentEnv(env []string, path string, args ...string) (*Component, error) {
	c := &Component{cmd: exec.Command(path, args...), out: &syncBuffer{}, done: make(chan error, 1), exited: make(chan struct{})}
	c.cmd.Stdout, c.cmd.Stderr = c.out, c.out
	if len(env) > 0 {
		c.cmd.Env = append(os.Environ(), env...)
	}
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := c.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		err := c.cmd.Wait()
		close(c.exited)
		c.done <- err
	}()
	return c, nil
}

// Exited is closed once the process has ended: a supervisor restarts it
// then, as the kubelet restarts a container.
func (c *Component) Exited() <-chan struct{} { return c.exited }

// Signal sends sig to the process (SIGSTOP and SIGCONT freeze and thaw it,
// as a long pause of its node or runtime would).
func (c *Component) Signal(sig syscall.Signal) error { return c.cmd.Process.Signal(sig) }

// Pid is the component's process ID.
func (c *Component) Pid() int { return c.cmd.Process.Pid }

// Logs returns everything the component wrote so far.
func (c *Component) Logs() string { return c.out.String() }

// Stop sends SIGTERM and waits up to grace for a clean exit. Stopping it
// again returns what the first Stop did: a suite stops a component itself
// (to show its logs), and the cluster it runs in stops whatever is left.
func (c *Component) Stop(grace time.Duration) error {
	c.stopOnce.Do(func() { c.stopErr = c.stop(grace) })
	return c.stopErr
}

func (c *Component) stop(grace time.Duration) error {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-c.done:
		// Killed by the SIGTERM itself: it came before the program had set
		// up its handler (it had only just started). Stopped as asked.
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGTERM {
				return nil
			}
		}
		return err
	case <-time.After(grace):
		_ = c.cmd.Process.Kill()
		return fmt.Errorf("%s did not stop within %s of SIGTERM", c.cmd.Path, grace)
	}
}

// Kill ends the process at once (SIGKILL), as a crash or an OOM kill would,
// and waits for it to be gone.
func (c *Component) Kill() {
	_ = c.cmd.Process.Kill()
	<-c.done
	c.done <- nil // Stop after Kill returns at once.
}

// WaitFor polls cond until it is true or timeout passes. For programs (the
// demo, the bench); tests use Gomega's Eventually.
func WaitFor(ctx context.Context, timeout time.Duration, cond func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("timed out after %s", timeout)
		case <-time.After(250 * time.Millisecond):
		}
	}
	return nil
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Running is a component started as its chart's identity, with where its
// endpoints listen.
type Running struct {
	*Component
	// MetricsURL is its /metrics, served over HTTPS to authorized callers.
	MetricsURL string
	// ReadyzURL is its readiness probe.
	ReadyzURL string
	// Pod is the pod name it was given (POD_NAME), if any.
	Pod string
}

// StartAsIdentity runs binary with the flags every chart's Deployment
// passes: the kubeconfig of the chart's ServiceAccount, leader election (a
// Lease in namespace) on or off, --namespace (the Deployment's
// POD_NAMESPACE), metrics and the health probe on free local ports, /metrics
// served with the chart's certificate (Chart.MetricsCert), JSON logs; then
// extra. One place says what "run as the chart runs it" means
// for every suite, the demo and the bench.
func StartAsIdentity(binary string, id *Identity, namespace string, leaderElect bool, extra ...string) (*Running, error) {
	return StartPodAsIdentity("", binary, id, namespace, leaderElect, extra...)
}

// StartPodAsIdentity is StartAsIdentity as pod: POD_NAME is set as the
// chart's Deployment sets it, so the process's requests say which replica
// made them (the user agent, in the audit log). POD_SERVICE_ACCOUNT is
// set as node-gate's Deployment sets it.
func StartPodAsIdentity(pod, binary string, id *Identity, namespace string, leaderElect bool, extra ...string) (*Running, error) {
	env := []string{"POD_SERVICE_ACCOUNT=" + id.ServiceAccount}
	if pod != "" {
		env = append(env, "POD_NAME="+pod)
	}
	// The addresses are free when chosen, not when the process binds them:
	// in between, any process on the machine may get the port (as the
	// ephemeral port of a connection, say). A start that lost one is tried
	// again with new addresses, as a Deployment's next pod would get them.
	for attempt := 1; ; attempt++ {
		metricsAddr, probeAddr, err := freeAddrs()
		if err != nil {
			return nil, err
		}
		args := []string{"--kubeconfig=" + id.Kubeconfig, fmt.Sprintf("--leader-elect=%t", leaderElect),
			"--leader-election-namespace=" + namespace, "--namespace=" + namespace,
			"--metrics-bind-address=" + metricsAddr, "--health-probe-bind-address=" + probeAddr, "--log-format=json"}
		if id.Chart != nil && id.Chart.MetricsCert != nil {
			// The certificate Secret the chart's Deployment mounts, here a folder.
			args = append(args, "--metrics-cert-dir="+id.Chart.MetricsCert.Dir)
		}
		args = append(args, extra...)
		c, err := StartComponentEnv(env, binary, args...)
		if err != nil {
			return nil, err
		}
		if attempt < bindAttempts && lostAddress(c, probeAddr) {
			continue
		}
		return &Running{Component: c, MetricsURL: "https://" + metricsAddr + "/metrics", ReadyzURL: "http://" + probeAddr + "/readyz", Pod: pod}, nil
	}
}

// bindAttempts is how many times StartPodAsIdentity starts a process whose
// addresses were taken before it could bind them.
const bindAttempts = 5

// lostAddress waits until c listens on its health-probe address (the
// controller manager binds its metrics address before it, so both are
// then its own) or exits, and says whether it exited because an address
// was taken. A process still not listening after a minute is left to the
// caller.
func lostAddress(c *Component, probeAddr string) bool {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		select {
		case <-c.Exited():
			return strings.Contains(c.Logs(), "address already in use")
		default:
		}
		if conn, err := net.DialTimeout("tcp", probeAddr, time.Second); err == nil {
			_ = conn.Close()
			return false
		}
		select {
		case <-c.Exited():
		case <-time.After(20 * time.Millisecond):
		}
	}
	return false
}

// freeAddrs are two free local addresses, for a component's metrics and
// health probes.
func freeAddrs() (metrics, probe string, err error) {
	if metrics, err = testenv.FreeAddr(); err != nil {
		return "", "", err
	}
	probe, err = testenv.FreeAddr()
	return metrics, probe, err
}
