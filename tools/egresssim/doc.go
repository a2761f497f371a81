// Package egresssim plays the network outside a cluster for egress-probe
// tests: a DNS server that answers from a table and fails names on request,
// and an HTTP CONNECT proxy that can refuse targets, both on loopback and
// both keeping a log of what they were asked. Probe targets themselves are
// plain httptest servers.
package egresssim
