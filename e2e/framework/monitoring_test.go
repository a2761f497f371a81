package framework

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestMonitoringQueries(t *testing.T) {
	rule := &unstructured.Unstructured{Object: map[string]any{
		"kind": "PrometheusRule", "metadata": map[string]any{"name": "r"},
		"spec": map[string]any{"groups": []any{map[string]any{"name": "g", "rules": []any{
			map[string]any{"alert": "A", "expr": "a > 0"},
			map[string]any{"record": "b:sum", "expr": "sum(b)"},
		}}}},
	}}
	dash := `{"panels": [
	  {"title": "P1", "targets": [{"expr": "p1"}, {"expr": "rate(p2{job=~\"$job\"}[$__rate_interval]) / ${__range}"}]},
	  {"title": "Row", "type": "row", "panels": [{"title": "P3", "targets": [{"expr": "p3"}]}]}],
	 "templating": {"list": [
	  {"name": "ds", "type": "datasource", "query": "prometheus"},
	  {"name": "job", "type": "query", "query": {"query": "label_values(v1{component=\"x\"}, job)"}},
	  {"name": "old", "type": "query", "query": "label_values(v2, pool)"}]}}`
	cm := &unstructured.Unstructured{Object: map[string]any{
		"kind": "ConfigMap", "metadata": map[string]any{"name": "d"},
		"data": map[string]any{"d.json": dash, "README": "not a dashboard"},
	}}
	got, err := (&Chart{Objects: []*unstructured.Unstructured{rule, cm}}).MonitoringQueries()
	if err != nil {
		t.Fatal(err)
	}
	want := []Query{
		{"PrometheusRule r rule A", "a > 0"},
		{"PrometheusRule r rule b:sum", "sum(b)"},
		{"dashboard d/d.json panel P1", "p1"},
		{"dashboard d/d.json panel P1", `rate(p2{job=~"$job"}[5m]) / 5m`},
		{"dashboard d/d.json panel P3", "p3"},
		{"dashboard d/d.json variable job", `v1{component="x"}`},
		{"dashboard d/d.json variable old", "v2"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}

	cm.Object["data"] = map[string]any{"broken.json": `{"panels": [`}
	if _, err := (&Chart{Objects: []*unstructured.Unstructured{cm}}).MonitoringQueries(); err == nil {
		t.Error("a dashboard that is not JSON: no error")
	}
}
