//go:build tools

// Package promtool pins the Prometheus release whose promtool the tests run:
// `promtool test rules` evaluates the charts' alerting rules with
// Prometheus's own rule engine, against series and expected alerts written in
// its unit-test format.
package promtool

import _ "github.com/prometheus/prometheus/cmd/promtool"
