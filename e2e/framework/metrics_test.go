package framework

import "testing"

func TestParseMetrics(t *testing.T) {
	text := `# TYPE requests_total counter
requests_total{method="POST",code="201"} 3
requests_total{method="GET",code="200"} 7
requests_total{method="PATCH",code="200"} 2
# TYPE pending gauge
pending{kind="node"} 4
# TYPE took_seconds histogram
took_seconds_bucket{controller="a",le="0.025"} 1
took_seconds_bucket{controller="a",le="0.1"} 3
took_seconds_bucket{controller="a",le="+Inf"} 5
took_seconds_sum{controller="a"} 1.5
took_seconds_count{controller="a"} 5
`
	ms, err := ParseMetrics(text)
	if err != nil {
		t.Fatal(err)
	}
	if got := ms.Sum("requests_total", nil); got != 12 {
		t.Errorf("all requests: %v", got)
	}
	writes := ms.SumIf("requests_total", func(l map[string]string) bool { return l["method"] != "GET" })
	if writes != 5 {
		t.Errorf("writes: %v", writes)
	}
	if v, ok := ms.Value("pending", map[string]string{"kind": "node"}); !ok || v != 4 {
		t.Errorf("pending: %v %v", v, ok)
	}
	if _, ok := ms.Value("pending", nil); ok {
		t.Error("pending without labels: found, but only kind=node is exposed")
	}
	a := map[string]string{"controller": "a"}
	for name, want := range map[string]float64{"took_seconds_sum": 1.5, "took_seconds_count": 5} {
		if got := ms.Sum(name, a); got != want {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
	for le, want := range map[string]float64{"0.025": 1, "0.1": 3, "+Inf": 5} {
		if got := ms.Sum("took_seconds_bucket", map[string]string{"controller": "a", "le": le}); got != want {
			t.Errorf("bucket le=%s: %v, want %v", le, got, want)
		}
	}
	if _, err := ParseMetrics("x{a=\"b} 1\n"); err == nil {
		t.Error("unclosed label value: no error")
	}
}
