package runtime

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/upshift-io/upshift/libs/buildinfo"
)

// version is the version this binary was built as (libs/buildinfo).
var version = buildinfo.Version()

// buildInfo is registered once per process; a process runs one component.
var buildInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "upshift_build_info",
	Help: "Always 1; the labels say which component and version this process is.",
}, []string{"component", "version"})

func init() {
	metrics.Registry.MustRegister(buildInfo)
}
