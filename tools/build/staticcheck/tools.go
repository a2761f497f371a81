//go:build tools

// Package staticcheck pins the version of honnef.co/go/tools/cmd/staticcheck that the Makefile builds.
package staticcheck

import _ "honnef.co/go/tools/cmd/staticcheck"
