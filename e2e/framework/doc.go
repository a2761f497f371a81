// Package framework is what every component's end-to-end suite shares: build
// the component's binary, render its Helm chart, install the chart's
// ServiceAccount and RBAC, run the binary as that ServiceAccount, and check
// afterwards — from the apiserver's audit log — that it was never refused a
// request and that every permission the chart grants was used.
//
// A suite (see e2e/updatestatus) starts libs/testenv with AuditLog, seeds and
// runs ocpsim, then uses these helpers.
package framework
