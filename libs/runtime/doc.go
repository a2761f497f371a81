// Package runtime is the one way every Upshift binary starts.
//
// A component's main is a few lines:
//
//	func main() {
//		os.Exit(runtime.Main("update-status-controller", os.Args[1:], setup))
//	}
//
// Main parses the common flags (see Flags), builds a zap logger behind logr
// with a "component" key, creates a controller-runtime manager whose cache
// strips managedFields, serves /healthz, /readyz (ready once the informer
// caches have synced) and /metrics (with upshift_build_info; HTTPS behind
// Kubernetes authentication and authorization unless --metrics-secure=false,
// see MetricsOptions), runs leader election on a Lease named after the
// component, calls setup to register the component's controllers, and runs
// until SIGTERM or SIGINT.
//
// The version is injected at build time (libs/buildinfo):
//
//	go build -ldflags "-X github.com/upshift-io/upshift/libs/buildinfo.version=v0.1.0"
package runtime
