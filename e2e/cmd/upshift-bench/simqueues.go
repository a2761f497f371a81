package main

import (
	"fmt"
	"sort"
	"time"

	dto "github.com/prometheus/client_model/go"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The simulator runs in the bench's process, so its controllers' work queues
// are in controller-runtime's metrics registry here. How long a node's event
// waited in the simulated MCO's queues, against how long it was worked,
// tells a slower update of the simulator's own making (too few workers)
// from one of the machine's (every request slower).

// queueUse is, per controller, the summed wait in its queue and work on its
// items, with their counts.
type queueUse map[string]queueSums

type queueSums struct {
	wait, work           float64 // seconds
	waitCount, workCount uint64
}

// readQueues reads every controller's queue histograms from the registry.
func readQueues() (queueUse, error) {
	families, err := metrics.Registry.Gather()
	if err != nil {
		return nil, err
	}
	out := queueUse{}
	for _, f := range families {
		var wait bool
		switch f.GetName() {
		case "workqueue_queue_duration_seconds":
			wait = true
		case "workqueue_work_duration_seconds":
		default:
			continue
		}
		for _, m := range f.GetMetric() {
			name := labelValue(m, "name")
			h := m.GetHistogram()
			if name == "" || h == nil {
				continue
			}
			s := out[name]
			if wait {
				s.wait, s.waitCount = h.GetSampleSum(), h.GetSampleCount()
			} else {
				s.work, s.workCount = h.GetSampleSum(), h.GetSampleCount()
			}
			out[name] = s
		}
	}
	return out, nil
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// since is the use between before and u.
func (u queueUse) since(before queueUse) queueUse {
	out := queueUse{}
	for name, s := range u {
		b := before[name]
		out[name] = queueSums{wait: s.wait - b.wait, work: s.work - b.work, waitCount: s.waitCount - b.waitCount, workCount: s.workCount - b.workCount}
	}
	return out
}

func (s queueSums) meanWait() time.Duration { return mean(s.wait, s.waitCount) }
func (s queueSums) meanWork() time.Duration { return mean(s.work, s.workCount) }

func mean(sum float64, n uint64) time.Duration {
	if n == 0 {
		return 0
	}
	return time.Duration(sum / float64(n) * float64(time.Second)).Round(100 * time.Microsecond)
}

// printQueueTable prints the simulator's busiest queues in both updates:
// items, mean wait before a worker took them, mean work.
func printQueueTable(without, with queueUse) {
	names := make([]string, 0, len(with))
	for n, s := range with {
		if s.workCount > 0 || without[n].workCount > 0 {
			names = append(names, n)
		}
	}
	sort.Slice(names, func(i, j int) bool { return with[names[i]].wait > with[names[j]].wait })
	if len(names) > 6 {
		names = names[:6]
	}
	fmt.Println("  the simulator's controller queues (items; mean wait for a worker; mean work):")
	for _, n := range names {
		a, b := without[n], with[n]
		fmt.Printf("    %-24s without %6d; %9s; %9s   with %6d; %9s; %9s\n", n,
			a.workCount, a.meanWait(), a.meanWork(), b.workCount, b.meanWait(), b.meanWork())
	}
}
