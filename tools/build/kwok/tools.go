//go:build tools

// Package kwok pins the kwok release that plays kubelets for the test nodes.
package kwok

import _ "sigs.k8s.io/kwok/cmd/kwok"
