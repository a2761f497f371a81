package runtime

import (
	"fmt"
	goruntime "runtime"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// version is set at build time with -ldflags -X (see the Makefile). Builds
// without it report "dev".
var version = "dev"

// Version returns the version this binary was built as.
func Version() string { return version }

// VersionString is what --version prints.
func VersionString(component string) string {
	return fmt.Sprintf("%s %s (%s %s/%s)", component, version, goruntime.Version(), goruntime.GOOS, goruntime.GOARCH)
}

// buildInfo is registered once per process; a process runs one component.
var buildInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "upshift_build_info",
	Help: "Always 1; the labels say which component and version this process is.",
}, []string{"component", "version"})

func init() {
	metrics.Registry.MustRegister(buildInfo)
}
