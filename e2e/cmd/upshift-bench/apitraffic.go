package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"

	"k8s.io/client-go/rest"

	"github.com/upshift-io/upshift/e2e/framework"
)

// The kube-apiserver is the process Upshift loads most (readCPU says how
// much); apiTraffic says with what. It is read from the apiserver's own
// counters, so that measuring costs one scrape per update instead of an
// audit log that would itself load the apiserver.
type apiTraffic struct {
	// seconds is the time the apiserver spent serving requests, by verb and
	// resource (apiserver_request_duration_seconds_sum): where its CPU goes
	// outside watches.
	seconds map[string]float64
	// requests counts them (apiserver_request_total).
	requests map[string]float64
	// watchBytes is what the apiserver sent to watchers, by resource
	// (apiserver_watch_events_sizes_sum): every watcher of a kind is sent
	// every change of every object of that kind.
	watchBytes map[string]float64
}

// readAPITraffic scrapes the apiserver's /metrics as cfg's user.
func readAPITraffic(ctx context.Context, cfg *rest.Config) (apiTraffic, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return apiTraffic{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(cfg.Host, "/")+"/metrics", nil)
	if err != nil {
		return apiTraffic{}, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return apiTraffic{}, fmt.Errorf("reading the apiserver's metrics: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return apiTraffic{}, fmt.Errorf("reading the apiserver's metrics: %s %v", resp.Status, err)
	}
	m, err := framework.ParseMetrics(string(body))
	if err != nil {
		return apiTraffic{}, fmt.Errorf("parsing the apiserver's metrics: %w", err)
	}
	t := apiTraffic{seconds: map[string]float64{}, requests: map[string]float64{}, watchBytes: map[string]float64{}}
	for _, s := range m {
		switch s.Name {
		case "apiserver_request_duration_seconds_sum":
			t.seconds[requestKey(s.Labels)] += s.Value
		case "apiserver_request_total":
			t.requests[requestKey(s.Labels)] += s.Value
		case "apiserver_watch_events_sizes_sum":
			// Kubernetes 1.32 renamed the label from kind to resource.
			what := s.Labels["resource"]
			if what == "" {
				what = s.Labels["kind"]
			}
			t.watchBytes[what] += s.Value
		}
	}
	return t, nil
}

// requestKey names a request class: "PATCH nodes/status".
func requestKey(l map[string]string) string {
	r := l["resource"]
	if l["subresource"] != "" {
		r += "/" + l["subresource"]
	}
	if r == "" {
		r = "(non-resource)"
	}
	return l["verb"] + " " + r
}

// since is the traffic from before to t.
func (t apiTraffic) since(before apiTraffic) apiTraffic {
	diff := func(a, b map[string]float64) map[string]float64 {
		d := map[string]float64{}
		for k, v := range a {
			if v -= b[k]; v != 0 {
				d[k] = v
			}
		}
		return d
	}
	return apiTraffic{seconds: diff(t.seconds, before.seconds), requests: diff(t.requests, before.requests),
		watchBytes: diff(t.watchBytes, before.watchBytes)}
}

// printAPITable prints the request classes and watched kinds that added
// the most between the update without and with Upshift, n of each.
func printAPITable(without, with apiTraffic, n int) {
	// top drops the classes skip names: a watch's time is how long it
	// stayed open, not what it cost.
	top := func(a, b map[string]float64, skip func(string) bool) []string {
		keys := map[string]bool{}
		for _, m := range []map[string]float64{a, b} {
			for k := range m {
				if !skip(k) {
					keys[k] = true
				}
			}
		}
		var out []string
		for k := range keys {
			out = append(out, k)
		}
		sort.Slice(out, func(i, j int) bool {
			di, dj := b[out[i]]-a[out[i]], b[out[j]]-a[out[j]]
			if di != dj {
				return di > dj
			}
			return out[i] < out[j]
		})
		if len(out) > n {
			out = out[:n]
		}
		return out
	}
	isWatch := func(k string) bool { return strings.HasPrefix(k, "WATCH") }
	fmt.Printf("  the apiserver's requests by class, most added time in them first (watches left out: their time is how long they stayed open):\n")
	fmt.Printf("  %-40s %9s %9s %9s %9s\n", "", "time w/o", "time with", "count w/o", "count with")
	for _, k := range top(without.seconds, with.seconds, isWatch) {
		fmt.Printf("  %-40s %8.0fs %8.0fs %9.0f %9.0f\n", k, without.seconds[k], with.seconds[k], without.requests[k], with.requests[k])
	}
	fmt.Printf("  what the apiserver sent to watchers, by kind, most added first:\n")
	for _, k := range top(without.watchBytes, with.watchBytes, func(string) bool { return false }) {
		fmt.Printf("  %-40s %7.0fMB %7.0fMB\n", k, without.watchBytes[k]/1e6, with.watchBytes[k]/1e6)
	}
}
