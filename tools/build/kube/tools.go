//go:build tools

// Package kube pins the Kubernetes release whose kube-apiserver and
// kube-controller-manager the tests run. It is its own module, outside go.work,
// because k8s.io/kubernetes' dependency graph must not leak into ours.
package kube

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
