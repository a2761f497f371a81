package runtime

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// buildInfo is registered once per process; a process runs one component.
var buildInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "upshift_build_info",
	Help: "Always 1; the labels say which component and version this process is.",
}, []string{"component", "version"})

func init() {
	metrics.Registry.MustRegister(buildInfo)
}
