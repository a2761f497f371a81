//go:build tools

// Package alertmanager pins the Alertmanager release the tests run: a real
// server for silences and alerts. Later releases embed their web UI from a
// folder their module zip does not ship, so they do not build from the proxy.
package alertmanager

import _ "github.com/prometheus/alertmanager/cmd/alertmanager"
