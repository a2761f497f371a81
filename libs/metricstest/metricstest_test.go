package metricstest

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestSeries(t *testing.T) {
	r := prometheus.NewRegistry()
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "g"}, []string{"z", "a"})
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "c"})
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "h"}, []string{"k"})
	r.MustRegister(g, c, h)
	g.WithLabelValues("1", "2").Set(3)
	c.Add(4)
	h.WithLabelValues("v").Observe(2)
	h.WithLabelValues("v").Observe(5)

	got, err := Series(r, "g")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got["a=2,z=1"] != 3 {
		t.Errorf("gauge: %v", got)
	}
	if got, _ := Series(r, "c"); len(got) != 1 || got[""] != 4 {
		t.Errorf("counter: %v", got)
	}
	if got, _ := Series(r, "h"); len(got) != 2 || got["k=v#count"] != 2 || got["k=v#sum"] != 7 {
		t.Errorf("histogram: %v", got)
	}
	if got, _ := Series(r, "missing"); len(got) != 0 {
		t.Errorf("missing: %v", got)
	}
}
