package metricstest

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestSeries(t *testing.T) {
	r := prometheus.NewRegistry()
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "g"}, []string{"z", "a"})
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "c"})
	r.MustRegister(g, c)
	g.WithLabelValues("1", "2").Set(3)
	c.Add(4)

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
	if got, _ := Series(r, "missing"); len(got) != 0 {
		t.Errorf("missing: %v", got)
	}
}
