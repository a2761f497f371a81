// Package metricstest reads a Prometheus registry the way tests assert on
// it: what /metrics would serve, one series per key.
package metricstest

import (
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// Series returns the series of the named gauge or counter that g would
// serve, keyed "label=value,..." with the label names sorted (an unlabelled
// series has the key "").
func Series(g prometheus.Gatherer, name string) (map[string]float64, error) {
	families, err := g.Gather()
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			sort.Strings(ls)
			v := m.GetGauge().GetValue()
			if m.GetCounter() != nil {
				v = m.GetCounter().GetValue()
			}
			out[strings.Join(ls, ",")] = v
		}
	}
	return out, nil
}
