package main

// What every bench shares: the cluster (framework.StartCluster), the
// bench's own watches, the component's metrics (framework.Metrics, parsed
// with Prometheus's parser), the write probe, percentiles and the
// component's process figures from /proc.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/upshift-io/upshift/e2e/framework"
	"github.com/upshift-io/upshift/libs/testenv"
	"github.com/upshift-io/upshift/tools/ocpsim"
)

// benchCluster is what startCluster asks for: the control plane, the
// cluster seeded and simulated, and the component's chart, installed as
// release in namespace. The step lines say when the control plane is up and
// when the cluster is seeded.
type benchCluster struct {
	controlPlane                testenv.Options
	seed                        ocpsim.Topology
	sim                         ocpsim.Options
	chart, release, namespace   string
	controlPlaneUp, seededNodes string
}

// pairGraph is the update graph of --pairs alternating updates: 4.16.1,
// the cluster's version, then one release per update.
func pairGraph(pairs int) []string {
	graph := []string{}
	for i := 0; i <= 2*pairs; i++ {
		graph = append(graph, fmt.Sprintf("4.16.%d", i+1))
	}
	return graph
}

// startCluster stands the bench's cluster up with the component's identity
// and a scraper bound to its chart's metrics-reader ClusterRole (metrics
// are read as Prometheus would). The component itself starts later, once
// the bench's watches are synced, so that its first start is timed alone.
func startCluster(ctx context.Context, start time.Time, b benchCluster) (*framework.Cluster, endpoint, *framework.Identity, error) {
	cluster, err := framework.StartCluster(ctx, framework.ClusterOptions{
		ControlPlane: b.controlPlane,
		Seed:         &b.seed,
		Sim:          &b.sim,
		Components:   []framework.ComponentOptions{{Chart: b.chart, Release: b.release, Namespace: b.namespace, Scraper: "prometheus"}},
		Progress: func(s framework.Stage) {
			switch s {
			case framework.StageSeed:
				step(start, "%s", b.controlPlaneUp)
			case framework.StageComponents:
				step(start, "%s", b.seededNodes)
			}
		},
	})
	if err != nil {
		return nil, endpoint{}, nil, err
	}
	c := cluster.Components[b.release]
	return cluster, endpoint{scraper: c.Scraper}, c.Identity, nil
}

// startWatches starts the bench's own informers, those register adds, and
// waits for them to sync; stop them before the control plane, or the
// apiserver waits on their watches.
func startWatches(ctx context.Context, cfg *rest.Config, o cache.Options, register func(cache.Cache) error) (cache.Cache, func(), error) {
	c, err := cache.New(cfg, o)
	if err != nil {
		return nil, nil, err
	}
	if err := register(c); err != nil {
		return nil, nil, err
	}
	watchCtx, stop := context.WithCancel(ctx)
	go func() { _ = c.Start(watchCtx) }()
	if !c.WaitForCacheSync(ctx) {
		stop()
		return nil, nil, fmt.Errorf("bench watches did not sync")
	}
	return c, stop, nil
}

// requestUpdate asks the simulated CVO for target, as an administrator's
// `oc adm upgrade --to` does: ClusterVersion's spec.desiredUpdate.
func requestUpdate(ctx context.Context, c client.Client, target string) error {
	cv := &configv1.ClusterVersion{}
	if err := c.Get(ctx, client.ObjectKey{Name: "version"}, cv); err != nil {
		return err
	}
	patch := client.MergeFrom(cv.DeepCopy())
	cv.Spec.DesiredUpdate = &configv1.Update{Version: target}
	return c.Patch(ctx, cv, patch)
}

// endpoint is the component's metrics URL and the identity that may read it.
type endpoint struct {
	scraper *framework.Scraper
	url     string
}

// metrics scrapes the component's /metrics.
func (e endpoint) metrics() (framework.Metrics, error) {
	return e.scraper.Metrics(e.url)
}

// writeRequests sums the component's client-go requests that write. They
// include the TokenReview and SubjectAccessReview that authenticate a scrape
// (at most two per scrape; the component caches the answers for minutes),
// which is noise against thousands of writes.
func writeRequests(ms framework.Metrics) float64 {
	return ms.SumIf("rest_client_requests_total", func(labels map[string]string) bool {
		switch labels["method"] {
		case "POST", "PUT", "PATCH", "DELETE":
			return true
		}
		return false
	})
}

// percentiles are p50, p99 and the maximum of the durations.
func percentiles(ds []time.Duration) [3]time.Duration {
	s := append([]time.Duration(nil), ds...)
	if len(s) == 0 {
		return [3]time.Duration{}
	}
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	at := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s))))].Round(time.Millisecond) }
	return [3]time.Duration{at(0.50), at(0.99), s[len(s)-1].Round(time.Millisecond)}
}

// countOver counts the durations longer than limit.
func countOver(ds []time.Duration, limit time.Duration) int {
	n := 0
	for _, d := range ds {
		if d > limit {
			n++
		}
	}
	return n
}

// writeProbe times one small write (a merge patch of a ConfigMap), then
// pauses for an interval, until stopped: the floor under any write a
// controller makes on this cluster at that moment. Every node-gate hop
// contains two (the status, then the Job or the label); every insight the
// update-status-controller shows contains one.
type writeProbe struct {
	stop chan struct{}
	done chan struct{}

	mu     sync.Mutex
	writes []probeWrite
}

// probeWrite is one timed write of the write probe.
type probeWrite struct {
	at time.Time
	d  time.Duration
}

// ensureConfigMap creates an empty ConfigMap the bench writes to, or reuses
// it when an earlier round of the same bench (node-gate's pairs) made it.
func ensureConfigMap(ctx context.Context, c client.Client, namespace, name string) (*corev1.ConfigMap, error) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	if err := c.Create(ctx, cm); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	return cm, nil
}

func startWriteProbe(ctx context.Context, c client.Client, namespace string, every time.Duration) (*writeProbe, error) {
	cm, err := ensureConfigMap(ctx, c, namespace, "bench-write-probe")
	if err != nil {
		return nil, err
	}
	p := &writeProbe{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for i := 0; ; i++ {
			select {
			case <-p.stop:
				return
			case <-ctx.Done():
				return
			case <-time.After(every):
			}
			body := fmt.Appendf(nil, `{"data":{"tick":"%d"}}`, i)
			t := time.Now()
			if err := c.Patch(ctx, cm, client.RawPatch(types.MergePatchType, body)); err == nil {
				p.mu.Lock()
				p.writes = append(p.writes, probeWrite{t, time.Since(t)})
				p.mu.Unlock()
			}
		}
	}()
	return p, nil
}

// between are the writes that started in [from, to]; none without a probe.
func (p *writeProbe) between(from, to time.Time) []probeWrite {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	i := sort.Search(len(p.writes), func(i int) bool { return !p.writes[i].at.Before(from) })
	j := sort.Search(len(p.writes), func(j int) bool { return p.writes[j].at.After(to) })
	return append([]probeWrite(nil), p.writes[i:max(i, j)]...)
}

// finish stops the probe and returns the p50, p99 and max of its writes.
func (p *writeProbe) finish() [3]time.Duration {
	close(p.stop)
	<-p.done
	return probePercentiles(p.between(time.Time{}, time.Now()))
}

// probePercentiles are the p50, p99 and max of writes.
func probePercentiles(writes []probeWrite) [3]time.Duration {
	ds := make([]time.Duration, len(writes))
	for i, w := range writes {
		ds[i] = w.d
	}
	return percentiles(ds)
}

func rss(pid int) string     { return procStatus(pid, "VmRSS") }
func peakRSS(pid int) string { return procStatus(pid, "VmHWM") }

func procStatus(pid int, field string) string {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "?"
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

// cpuSeconds is the user+system CPU time the process used so far, from
// /proc/<pid>/stat (clock ticks of 10 ms).
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name may hold spaces: fields count from after its ")".
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100
}
