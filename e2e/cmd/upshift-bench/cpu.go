package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// On a machine of two cores the control plane, kwok, ocpsim and the
// components compete for the same CPU, so the wall time Upshift adds is
// mostly CPU someone spent. cpuUse is what explains it: the CPU time (user +
// system) each process started by the bench used, by program name, read
// from /proc. Processes of the same program (several kwok or component
// processes) add up.
type cpuUse map[string]time.Duration

// userHZ is the unit of /proc/<pid>/stat's times: Linux fixes it at 100
// ticks per second for user space on every architecture, whatever the
// kernel's own HZ.
const userHZ = 100

// readCPU reads the CPU time so far of the bench and every process it
// started, directly or not.
func readCPU() (cpuUse, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	type proc struct {
		ppid int
		name string
		cpu  time.Duration
	}
	procs := map[int]proc{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone since the listing
		}
		ppid, ticks, ok := parseStat(stat)
		if !ok {
			continue
		}
		procs[pid] = proc{ppid: ppid, name: programName(pid), cpu: time.Duration(ticks) * time.Second / userHZ}
	}
	self := os.Getpid()
	isOurs := func(pid int) bool {
		for seen := 0; pid > 1 && seen < 64; seen++ {
			if pid == self {
				return true
			}
			pid = procs[pid].ppid
		}
		return false
	}
	use := cpuUse{}
	for pid, p := range procs {
		if isOurs(pid) {
			use[p.name] += p.cpu
		}
	}
	return use, nil
}

// parseStat reads the parent pid and utime + stime of a /proc/<pid>/stat
// line. The command name in parentheses may hold spaces and parentheses,
// so the fields are counted from the last ')'.
func parseStat(stat []byte) (ppid int, ticks int64, ok bool) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, 0, false
	}
	// After ") ": state(3) ppid(4) ... utime(14) stime(15).
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		return 0, 0, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	utime, err2 := strconv.ParseInt(f[11], 10, 64)
	stime, err3 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return 0, 0, false
	}
	return ppid, utime + stime, true
}

// programName is the base name of the process's program: /proc's comm is
// cut at 15 characters, which makes kube-controller-manager and
// kube-controller-anything one name.
func programName(pid int) string {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(cmdline) == 0 {
		return "?"
	}
	argv0, _, _ := bytes.Cut(cmdline, []byte{0})
	return filepath.Base(string(argv0))
}

// since is the CPU used from before to u, by program.
func (u cpuUse) since(before cpuUse) cpuUse {
	d := cpuUse{}
	for name, t := range u {
		d[name] = t - before[name]
	}
	return d
}

// total is the CPU time of every program.
func (u cpuUse) total() time.Duration {
	var t time.Duration
	for _, d := range u {
		t += d
	}
	return t
}

// printCPUTable prints, per program, the CPU time used during the update
// without and with Upshift (most added first) and the totals against the
// machine's capacity over each update's wall time.
func printCPUTable(without, with cpuUse, wallWithout, wallWith time.Duration, cores int) {
	names := map[string]bool{}
	for n := range without {
		names[n] = true
	}
	for n := range with {
		names[n] = true
	}
	var sorted []string
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Slice(sorted, func(i, j int) bool {
		di, dj := with[sorted[i]]-without[sorted[i]], with[sorted[j]]-without[sorted[j]]
		if di != dj {
			return di > dj
		}
		return sorted[i] < sorted[j]
	})
	fmt.Printf("  CPU during the update (user + system, by program):\n")
	fmt.Printf("  %-26s %8s %8s %8s\n", "", "without", "with", "added")
	for _, n := range sorted {
		fmt.Printf("  %-26s %7.0fs %7.0fs %+7.0fs\n", n, without[n].Seconds(), with[n].Seconds(), (with[n] - without[n]).Seconds())
	}
	capacity := func(wall time.Duration) float64 { return float64(cores) * wall.Seconds() }
	fmt.Printf("  %-26s %7.0fs %7.0fs %+7.0fs  of %.0fs / %.0fs the %d cores could give\n", "all", without.total().Seconds(), with.total().Seconds(),
		(with.total() - without.total()).Seconds(), capacity(wallWithout), capacity(wallWith), cores)
}
