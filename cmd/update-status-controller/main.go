// Command update-status-controller publishes where an OpenShift update
// stands as the UpgradeStatus singleton and one NodeProgressInsight per node.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime/debug"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/upshift-io/upshift/libs/alerts"
	"github.com/upshift-io/upshift/libs/events"
	"github.com/upshift-io/upshift/libs/runtime"
	"github.com/upshift-io/upshift/services/updatestatus/controller"
)

// gcPercent is the controller's GOGC unless the environment sets one. Go's
// default (100) lets the heap grow to twice what is live before a
// collection; the controller's live heap is mostly its cache (on 5,000 nodes
// 25-30 MiB), so its peak RSS is set by that factor. 50 (one and a half
// times) takes about 17 MiB off the peak of a first start on 5,000 nodes
// (BenchmarkFirstStartMemory), for collections twice as often, which a
// controller that recomputes on object changes only can afford: the CPU
// time of that first start did not measurably change. The chart also sets GOMEMLIMIT to the container's
// memory limit, so that near the limit the runtime collects harder instead
// of the container being killed.
const gcPercent = 50

func main() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(gcPercent)
	}
	namespace := os.Getenv("POD_NAMESPACE")
	var alertsCfg alerts.Config
	var alertsAPI string
	alertsInterval := controller.DefaultAlertsInterval
	recomputeInterval := controller.DefaultMinRecomputeInterval
	runtime.MainProcess(runtime.Component{
		Name: "update-status-controller",
		Flags: func(fs *flag.FlagSet) {
			fs.StringVar(&namespace, "namespace", namespace,
				"Namespace of the "+controller.PrototypeConfigMap+" ConfigMap (default $POD_NAMESPACE); empty: never write it.")
			fs.StringVar(&alertsCfg.URL, "alerts-url", "",
				"Base URL of the alerts API for alert-based health insights, e.g. https://thanos-querier.openshift-monitoring.svc:9091; empty: alerts are not read.")
			fs.StringVar(&alertsAPI, "alerts-api", "",
				`API at --alerts-url: "prometheus" (Prometheus or Thanos querier /api/v1/alerts) or "alertmanager" (/api/v2/alerts). Empty: "alertmanager" when the URL ends in /api/v2 or /api/v2/alerts, else "prometheus".`)
			fs.DurationVar(&alertsCfg.Timeout, "alerts-timeout", alerts.DefaultTimeout, "Bound of one read of the alerts.")
			fs.DurationVar(&alertsInterval, "alerts-interval", alertsInterval, "Time between two reads of the alerts.")
			fs.DurationVar(&recomputeInterval, "min-recompute-interval", recomputeInterval,
				"Least time between the starts of two recomputations: changes meanwhile are read by the next.")
			fs.StringVar(&alertsCfg.BearerTokenFile, "alerts-bearer-token-file", "",
				"File whose content is sent as a bearer token to the alerts API, read at every request (in a pod: /var/run/secrets/kubernetes.io/serviceaccount/token).")
			fs.StringVar(&alertsCfg.CAFile, "alerts-ca-file", "",
				"PEM file of the CAs that sign the alerts API's certificate (on OpenShift: /var/run/secrets/kubernetes.io/serviceaccount/service-ca.crt); empty: the system's.")
		},
		Options: func() runtime.Options { return controller.ManagerOptions(namespace) },
		Setup: func(_ context.Context, mgr manager.Manager, log logr.Logger) error {
			if namespace == "" {
				log.Info("no --namespace and no $POD_NAMESPACE: the prototype ConfigMap is not kept")
			}
			if recomputeInterval <= 0 {
				return errors.New("--min-recompute-interval must be positive: it bounds how often the whole cluster is assessed")
			}
			r := &controller.Reconciler{
				Client:               mgr.GetClient(),
				Recorder:             events.NewRecorder(mgr.GetEventRecorder("update-status-controller")),
				Metrics:              controller.NewMetrics(ctrlmetrics.Registry),
				Namespace:            namespace,
				MinRecomputeInterval: recomputeInterval,
			}
			if alertsCfg.URL != "" {
				alertsCfg.API = alerts.API(alertsAPI)
				// The reads name the pod, as its API requests do.
				alertsCfg.UserAgent = runtime.PodUserAgent("upshift-update-status-controller")
				client, err := alerts.New(alertsCfg)
				if err != nil {
					return err
				}
				if alertsInterval <= 0 {
					return fmt.Errorf("invalid value %s for flag --alerts-interval: must be positive", alertsInterval)
				}
				r.Alerts = &controller.Alerts{Client: client, URL: alertsCfg.URL, Interval: alertsInterval}
				api := alertsCfg.API
				if api == "" {
					api = alerts.DetectAPI(alertsCfg.URL)
				}
				log.Info("reading alerts", "url", alertsCfg.URL, "api", api, "interval", alertsInterval, "timeout", alertsCfg.Timeout)
			} else {
				log.Info("no --alerts-url: alerts are not read, and no health insight comes from them")
			}
			return r.SetupWithManager(mgr)
		},
	})
}
