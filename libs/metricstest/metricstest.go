// Package metricstest reads a Prometheus registry the way tests assert on
// it: what /metrics would serve, one series per key.
package metricstest

import (
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// Series returns the series of the named metric that g would serve, keyed
// "label=value,..." with the label names sorted (an unlabelled series has the
// key ""). A gauge or counter gives its value; a histogram gives its sample
// count under "<key>#count" and its sum under "<key>#sum".
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
			key := strings.Join(ls, ",")
			switch {
			case m.GetHistogram() != nil:
				out[key+"#count"] = float64(m.GetHistogram().GetSampleCount())
				out[key+"#sum"] = m.GetHistogram().GetSampleSum()
			case m.GetCounter() != nil:
				out[key] = m.GetCounter().GetValue()
			default:
				out[key] = m.GetGauge().GetValue()
			}
		}
	}
	return out, nil
}
