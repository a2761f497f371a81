// Package framework is what every component's end-to-end suite, `make demo`
// and `make bench` share. StartCluster is the one way they stand up a
// simulated cluster: the control plane (libs/testenv), the seeded cluster
// and ocpsim (tools/ocpsim/simcluster, which the services' controller suites
// use directly), each component's chart identity — its ServiceAccount and
// RBAC, its webhooks — and the components asked for, each binary running as
// its chart's ServiceAccount. The rest checks afterwards, from the
// apiserver's audit log, that a component was never refused a request and
// that every permission its chart grants was used, and reads its metrics.
package framework
