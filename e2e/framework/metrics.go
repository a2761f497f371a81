package framework

import (
	"math"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Sample is one series of a scrape as the text format exposes it: a
// histogram is its _bucket (with le), _sum and _count series, a summary its
// quantiles, _sum and _count.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// Metrics are the samples of one scrape.
type Metrics []Sample

// ParseMetrics reads the Prometheus text format, with Prometheus's own
// parser.
func ParseMetrics(text string) (Metrics, error) {
	// The format ends every line with a newline; the parser refuses a last
	// line without one, as a test's one-line exposition has.
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		return nil, err
	}
	var out Metrics
	for name, f := range families {
		for _, m := range f.GetMetric() {
			out = append(out, samplesOf(name, f.GetType(), m)...)
		}
	}
	return out, nil
}

// Metrics reads url's metrics as the scraper.
func (s *Scraper) Metrics(url string) (Metrics, error) {
	body, err := s.Scrape(url)
	if err != nil {
		return nil, err
	}
	return ParseMetrics(body)
}

func samplesOf(name string, typ dto.MetricType, m *dto.Metric) []Sample {
	labels := map[string]string{}
	for _, l := range m.GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	with := func(k, v string) map[string]string {
		out := map[string]string{k: v}
		for lk, lv := range labels {
			out[lk] = lv
		}
		return out
	}
	switch typ {
	case dto.MetricType_COUNTER:
		return []Sample{{name, labels, m.GetCounter().GetValue()}}
	case dto.MetricType_GAUGE:
		return []Sample{{name, labels, m.GetGauge().GetValue()}}
	case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
		h := m.GetHistogram()
		var out []Sample
		inf := false
		for _, b := range h.GetBucket() {
			inf = inf || math.IsInf(b.GetUpperBound(), +1)
			out = append(out, Sample{name + "_bucket", with("le", formatBound(b.GetUpperBound())), float64(b.GetCumulativeCount())})
		}
		// Every histogram has a +Inf bucket, the count, exposed or not.
		if !inf {
			out = append(out, Sample{name + "_bucket", with("le", "+Inf"), float64(h.GetSampleCount())})
		}
		return append(out, Sample{name + "_sum", labels, h.GetSampleSum()}, Sample{name + "_count", labels, float64(h.GetSampleCount())})
	case dto.MetricType_SUMMARY:
		s := m.GetSummary()
		var out []Sample
		for _, q := range s.GetQuantile() {
			out = append(out, Sample{name, with("quantile", formatBound(q.GetQuantile())), q.GetValue()})
		}
		return append(out, Sample{name + "_sum", labels, s.GetSampleSum()}, Sample{name + "_count", labels, float64(s.GetSampleCount())})
	default:
		return []Sample{{name, labels, m.GetUntyped().GetValue()}}
	}
}

func formatBound(f float64) string {
	if math.IsInf(f, +1) {
		return "+Inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// Sum adds the samples of series name whose labels include every pair of
// match (a counter over all its other label values).
func (ms Metrics) Sum(name string, match map[string]string) float64 {
	return ms.SumIf(name, func(labels map[string]string) bool { return hasAll(labels, match) })
}

// SumIf adds the samples of series name whose labels keep accepts.
func (ms Metrics) SumIf(name string, keep func(labels map[string]string) bool) float64 {
	total := 0.0
	for _, s := range ms {
		if s.Name == name && keep(s.Labels) {
			total += s.Value
		}
	}
	return total
}

// Value is the sample of series name with exactly the labels of match, and
// whether there is one.
func (ms Metrics) Value(name string, match map[string]string) (float64, bool) {
	for _, s := range ms {
		if s.Name == name && len(s.Labels) == len(match) && hasAll(s.Labels, match) {
			return s.Value, true
		}
	}
	return 0, false
}

func hasAll(labels, match map[string]string) bool {
	for k, v := range match {
		if labels[k] != v {
			return false
		}
	}
	return true
}
