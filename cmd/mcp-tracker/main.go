// Command mcp-tracker follows every MachineConfigPool's update, node by node
// from the MCO's annotations: it exports the per-pool progress as metrics,
// records Events, and writes its own part of the UpgradeConfigs' status
// (status.pools, the WorkersUpgraded condition and MUO's
// history[].workerStartTime/workerCompleteTime) with server-side apply.
package main

import (
	"context"
	"errors"
	"flag"
	"os"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	upgradev1alpha1 "github.com/upshift-io/upshift/api/upgrade/v1alpha1"
	"github.com/upshift-io/upshift/libs/events"
	"github.com/upshift-io/upshift/libs/runtime"
	"github.com/upshift-io/upshift/services/mcptracker/controller"
)

func main() {
	namespace := os.Getenv("POD_NAMESPACE")
	stuckAfter := controller.DefaultStuckAfter
	writeInterval := controller.DefaultMinWriteInterval
	passInterval := controller.DefaultMinPassInterval
	runtime.MainProcess(runtime.Component{
		Name: "mcp-tracker",
		Flags: func(fs *flag.FlagSet) {
			fs.StringVar(&namespace, "namespace", namespace,
				"Namespace of the UpgradeConfigs whose status the tracker writes (default $POD_NAMESPACE).")
			fs.DurationVar(&stuckAfter, "stuck-after", stuckAfter,
				"A node in one updating or degraded state for longer counts as stuck (metric, Event, condition). 0 turns it off.")
			fs.DurationVar(&writeInterval, "min-write-interval", writeInterval,
				"At most one status write per UpgradeConfig in this interval: changes within it are coalesced.")
			fs.DurationVar(&passInterval, "min-pass-interval", passInterval,
				"Least time between the starts of two passes over the pools: changes meanwhile are read by the next.")
		},
		Options: func() runtime.Options {
			opts := controller.CacheOptions()
			// Only the UpgradeConfigs of the namespace: the chart grants
			// nothing cluster-wide on them.
			opts.ByObject[&upgradev1alpha1.UpgradeConfig{}] = cache.ByObject{Namespaces: map[string]cache.Config{namespace: {}}}
			return runtime.Options{Cache: opts}
		},
		Setup: func(_ context.Context, mgr manager.Manager, log logr.Logger) error {
			if namespace == "" {
				return errors.New("no --namespace and no $POD_NAMESPACE: set the namespace of the UpgradeConfigs")
			}
			if writeInterval <= 0 {
				return errors.New("--min-write-interval must be positive: it bounds the writes to each UpgradeConfig")
			}
			if passInterval <= 0 {
				return errors.New("--min-pass-interval must be positive: it bounds how often every pool is assessed")
			}
			st := stuckAfter
			if st == 0 {
				st = -1 // the Reconciler's "off"
			}
			log.Info("tracking pools", "namespace", namespace, "stuckAfter", stuckAfter.String(), "minWriteInterval", writeInterval.String(),
				"minPassInterval", passInterval.String())
			return (&controller.Reconciler{
				Client:           mgr.GetClient(),
				Recorder:         events.NewRecorder(mgr.GetEventRecorder("mcp-tracker")),
				Metrics:          controller.NewMetrics(ctrlmetrics.Registry),
				Namespace:        namespace,
				StuckAfter:       st,
				MinWriteInterval: writeInterval,
				MinPassInterval:  passInterval,
			}).SetupWithManager(mgr)
		},
	})
}
