//go:build tools

// Package helm pins the version of helm.sh/helm/v3/cmd/helm that the Makefile builds.
package helm

import _ "helm.sh/helm/v3/cmd/helm"
