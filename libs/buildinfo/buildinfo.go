// Package buildinfo is the version a binary was built as. It imports nothing
// beyond the standard library, so that the kubectl plugin can print its
// version without linking the controllers' runtime: every package a
// short-lived command links costs it start-up time.
//
// The version is injected at build time (see the Makefile):
//
//	go build -ldflags "-X github.com/upshift-io/upshift/libs/buildinfo.version=v0.1.0"
package buildinfo

import (
	"fmt"
	"runtime"
)

// version is set at build time with -ldflags -X. Builds without it report
// "dev".
var version = "dev"

// Version returns the version this binary was built as.
func Version() string { return version }

// String is what --version prints for component.
func String(component string) string {
	return fmt.Sprintf("%s %s (%s %s/%s)", component, version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
