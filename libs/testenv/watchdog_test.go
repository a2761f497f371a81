package testenv

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// envCrashChild makes the test binary start a control plane and then crash,
// the way a test with an unrecovered panic in a goroutine does.
const envCrashChild = "UPSHIFT_TESTENV_CRASH_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(envCrashChild) == "1" {
		crashChild()
	}
	os.Exit(m.Run())
}

func crashChild() {
	env, err := Start(context.Background(), Options{ControllerManager: true})
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	pids, _ := childPIDs(binEtcd, binAPIServer)
	for _, c := range env.children {
		pids = append(pids, c.cmd.Process.Pid)
	}
	fmt.Println("PIDS", strings.Trim(fmt.Sprint(pids), "[]"))
	go func() { panic("a test goroutine panics; no cleanup runs") }()
	select {}
}

func TestNoProcessOutlivesACrashedTest(t *testing.T) {
	g := NewWithT(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envCrashChild+"=1")
	out, err := cmd.StdoutPipe()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cmd.Start()).To(Succeed())

	var pids []int
	scanner := bufio.NewScanner(out)
	for scanner.Scan() {
		line := scanner.Text()
		if rest, ok := strings.CutPrefix(line, "PIDS "); ok {
			for _, f := range strings.Fields(rest) {
				pid, err := strconv.Atoi(f)
				g.Expect(err).NotTo(HaveOccurred())
				pids = append(pids, pid)
			}
			break
		}
		g.Expect(line).NotTo(HavePrefix("ERROR"))
	}
	// etcd, kube-apiserver and kube-controller-manager.
	g.Expect(pids).To(HaveLen(3), "the crashing child reported its processes")
	g.Expect(cmd.Wait()).To(HaveOccurred(), "the child should have crashed")

	g.Eventually(func() []int {
		var alive []int
		for _, pid := range pids {
			if running(pid) {
				alive = append(alive, pid)
			}
		}
		return alive
	}).WithTimeout(10*time.Second).Should(BeEmpty(), "control-plane processes outlived the crashed test")
}

// running is true for a live process; a zombie waiting for init to reap it is
// already dead.
func running(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	end := strings.LastIndexByte(string(stat), ')')
	return end < 0 || !strings.HasPrefix(strings.TrimSpace(string(stat[end+1:])), "Z")
}
