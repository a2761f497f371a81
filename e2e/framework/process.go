package framework

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Component is a binary running in its own process, its output captured.
type Component struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan error
}

// StartComponent runs path with args.
func StartComponent(path string, args ...string) (*Component, error) {
	c := &Component{cmd: exec.Command(path, args...), out: &syncBuffer{}, done: make(chan error, 1)}
	c.cmd.Stdout, c.cmd.Stderr = c.out, c.out
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := c.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { c.done <- c.cmd.Wait() }()
	return c, nil
}

// Pid is the component's process ID.
func (c *Component) Pid() int { return c.cmd.Process.Pid }

// Logs returns everything the component wrote so far.
func (c *Component) Logs() string { return c.out.String() }

// Stop sends SIGTERM and waits up to grace for a clean exit.
func (c *Component) Stop(grace time.Duration) error {
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
