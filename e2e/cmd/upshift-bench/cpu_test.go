package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		name, stat string
		ppid       int
		ticks      int64
		ok         bool
	}{
		{"plain", "4242 (etcd) S 4000 4242 4000 0 -1 4194560 100 0 0 0 1234 56 0 0 20 0 12 0 100 0 0", 4000, 1290, true},
		{"a name with spaces and parentheses", "77 (a (b) c) R 1 77 77 0 -1 0 0 0 0 0 7 3 0 0 20 0 1 0 5 0 0", 1, 10, true},
		{"cut short", "77 (x) R 1 77", 0, 0, false},
		{"no name", "77 x R 1", 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ppid, ticks, ok := parseStat([]byte(tc.stat))
			if ppid != tc.ppid || ticks != tc.ticks || ok != tc.ok {
				t.Errorf("parseStat = %d, %d, %v; want %d, %d, %v", ppid, ticks, ok, tc.ppid, tc.ticks, tc.ok)
			}
		})
	}
}

// TestReadCPUCountsChildren: a child that burnt CPU is counted under its
// program's name, and this process under its own.
func TestReadCPUCountsChildren(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatalf("no sh: %v", err)
	}
	// The child busies itself, says so, and waits for its stdin to close.
	child := exec.Command(sh, "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; echo busy; read _")
	stdin, err := child.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stdin.Close(); _ = child.Wait() }()
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "busy\n" {
		t.Fatalf("child said %q, %v", line, err)
	}
	use, err := readCPU()
	if err != nil {
		t.Fatal(err)
	}
	if use[filepath.Base(sh)] < 10*time.Millisecond {
		t.Errorf("the busy child's CPU is %s: %v", use[filepath.Base(sh)], use)
	}
	if use[filepath.Base(os.Args[0])] <= 0 {
		t.Errorf("no CPU counted for this process (%s): %v", filepath.Base(os.Args[0]), use)
	}
}
