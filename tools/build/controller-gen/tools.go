//go:build tools

// Package controllergen pins the version of sigs.k8s.io/controller-tools/cmd/controller-gen that the Makefile builds.
package controllergen

import _ "sigs.k8s.io/controller-tools/cmd/controller-gen"
