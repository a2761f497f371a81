package testenv

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// child is a helper process (kube-controller-manager, kube-scheduler, kwok)
// whose output goes to a log file in the environment's folder.
type child struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	err     error
}

func startChild(dir, name, path string, args ...string) (*child, error) {
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Belt and braces with the watchdog: the kernel kills the child if the
	// test process dies without running its cleanups.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		logFile.Close()
		close(c.done)
	}()
	return c, nil
}

// exited reports an error if the child has already stopped, with the tail of
// its log: a helper that dies at start-up usually says why in its last lines.
func (c *child) exited() error {
	select {
	case <-c.done:
		return fmt.Errorf("%s exited (%v):\n%s", c.name, c.err, tail(c.logPath, 15))
	default:
		return nil
	}
}

// stop sends SIGTERM, then SIGKILL after the grace period.
func (c *child) stop(grace time.Duration) {
	select {
	case <-c.done:
		return
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(grace):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}

func tail(path string, lines int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return "    " + strings.Join(all, "\n    ")
}

// watchdog is a shell that blocks reading a pipe only this process holds
// open. When this process dies in any way — a panic, os.Exit, SIGKILL — the
// pipe closes, the read returns and the shell kills the listed processes, so
// no etcd or kube-apiserver outlives a crashed test.
type watchdog struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

func startWatchdog(pids []int) (*watchdog, error) {
	list := make([]string, len(pids))
	for i, p := range pids {
		list[i] = strconv.Itoa(p)
	}
	cmd := exec.Command("/bin/sh", "-c", "read _ignored; kill -9 "+strings.Join(list, " ")+" 2>/dev/null")
	// Its own process group, so a Ctrl-C to the test does not kill it early.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting watchdog: %w", err)
	}
	return &watchdog{cmd: cmd, stdin: stdin}, nil
}

// disarm stops the watchdog without letting it kill anything; used once the
// processes have been stopped in order.
func (w *watchdog) disarm() {
	_ = w.cmd.Process.Kill()
	_ = w.cmd.Wait()
	_ = w.stdin.Close()
}

// childPIDs lists the running children of this process whose executable has
// one of the given names (envtest starts etcd and kube-apiserver itself and
// does not expose their PIDs).
func childPIDs(names ...string) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// Format: pid (comm) state ppid ...; comm may contain spaces.
		end := bytes.LastIndexByte(stat, ')')
		start := bytes.IndexByte(stat, '(')
		if start < 0 || end < start {
			continue
		}
		comm := string(stat[start+1 : end])
		fields := strings.Fields(string(stat[end+1:]))
		if len(fields) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		if ppid != self {
			continue
		}
		for _, n := range names {
			// comm is truncated to 15 characters by the kernel.
			if len(n) > 15 {
				n = n[:15]
			}
			if comm == n {
				pids = append(pids, pid)
			}
		}
	}
	return pids, nil
}

// waitFor polls cond until it returns true, an error, or the timeout. It is
// for start-up only, where there is nothing to watch yet.
func waitFor(ctx context.Context, timeout time.Duration, what string, cond func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("timed out after %s waiting for %s: %w", timeout, what, last)
			}
			return fmt.Errorf("timed out after %s waiting for %s", timeout, what)
		case <-tick.C:
		}
	}
}

// The control plane's own output goes to files in Env.Dir (envtest drops it
// unless asked), so that a failure to start, or to start again, can say
// why: an apiserver that exits at once leaves only envtest's "timeout
// waiting for process kube-apiserver to start" otherwise.
const (
	etcdLog      = "etcd.log"
	apiServerLog = "kube-apiserver.log"
)

// logControlPlane points etcd's and kube-apiserver's output at their files.
func (e *Env) logControlPlane() error {
	cp := &e.envtest.ControlPlane
	if cp.Etcd == nil {
		cp.Etcd = &envtest.Etcd{}
	}
	api := cp.GetAPIServer()
	for _, f := range []struct {
		name     string
		out, err *io.Writer
	}{{etcdLog, &cp.Etcd.Out, &cp.Etcd.Err}, {apiServerLog, &api.Out, &api.Err}} {
		file, err := os.OpenFile(filepath.Join(e.Dir, f.name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return err
		}
		e.logs = append(e.logs, file)
		*f.out, *f.err = file, file
	}
	return nil
}

// controlPlaneTail is the end of etcd's and kube-apiserver's output, for an
// error message ("" when there is none).
func (e *Env) controlPlaneTail() string {
	const keep = 3000
	out := ""
	for _, name := range []string{etcdLog, apiServerLog} {
		data, err := os.ReadFile(filepath.Join(e.Dir, name))
		if err != nil || len(data) == 0 {
			continue
		}
		if len(data) > keep {
			data = data[len(data)-keep:]
		}
		out += fmt.Sprintf("\n--- the end of %s:\n%s", name, data)
	}
	return out
}
