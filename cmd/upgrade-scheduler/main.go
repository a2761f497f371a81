// Command upgrade-scheduler runs the UpgradeConfigs of its namespace: at
// upgradeAt, inside a maintenance window when any are set, it checks the
// cluster, reserves capacity, points ClusterVersion at the target, follows
// the control plane and the workers, checks again and cleans up.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/upshift-io/upshift/libs/alerts"
	"github.com/upshift-io/upshift/libs/events"
	"github.com/upshift-io/upshift/libs/runtime"
	"github.com/upshift-io/upshift/services/upgradescheduler/config"
	"github.com/upshift-io/upshift/services/upgradescheduler/controller"
	"github.com/upshift-io/upshift/services/upgradescheduler/metrics"
	"github.com/upshift-io/upshift/services/upgradescheduler/ocm"
	"github.com/upshift-io/upshift/services/upgradescheduler/plan"
	"github.com/upshift-io/upshift/services/upgradescheduler/silence"
)

func main() {
	namespace := os.Getenv("POD_NAMESPACE")
	var am, prom alerts.Config
	silenceTTL := silence.DefaultTTL
	var ocmEnabled bool
	ocmTimeout, ocmSyncInterval := 30*time.Second, time.Duration(0)
	runtime.MainProcess(runtime.Component{
		Name: "upgrade-scheduler",
		Flags: func(fs *flag.FlagSet) {
			fs.StringVar(&namespace, "namespace", namespace,
				"Namespace of the UpgradeConfigs to run and of the "+config.ConfigMapName+" ConfigMap (default $POD_NAMESPACE).")
			fs.StringVar(&am.URL, "alertmanager-url", "",
				"Base URL of Alertmanager (in front of /api/v2), e.g. https://alertmanager-main.openshift-monitoring.svc:9094: maintenance silences, "+
					"and the critical-alerts health check from its active alerts. Empty: no silences, and the check reports \"not configured\".")
			fs.DurationVar(&am.Timeout, "alertmanager-timeout", alerts.DefaultTimeout, "Bound of one Alertmanager request.")
			fs.StringVar(&am.BearerTokenFile, "alertmanager-bearer-token-file", "",
				"File whose content is sent as a bearer token to Alertmanager, read at every request (in a pod: /var/run/secrets/kubernetes.io/serviceaccount/token).")
			fs.StringVar(&am.CAFile, "alertmanager-ca-file", "",
				"PEM file of the CAs that sign Alertmanager's certificate (on OpenShift: /var/run/secrets/kubernetes.io/serviceaccount/service-ca.crt); empty: the system's.")
			fs.StringVar(&prom.URL, "alerts-url", "",
				"Base URL of Prometheus's alerts API (in front of /api/v1/alerts), e.g. https://thanos-querier.openshift-monitoring.svc:9091: "+
					"the critical-alerts health check reads the firing alerts there instead of from Alertmanager (silences still need --alertmanager-url).")
			fs.DurationVar(&prom.Timeout, "alerts-timeout", alerts.DefaultTimeout, "Bound of one read of --alerts-url.")
			fs.StringVar(&prom.BearerTokenFile, "alerts-bearer-token-file", "",
				"File whose content is sent as a bearer token to --alerts-url, read at every request (the Thanos querier wants the ServiceAccount's token).")
			fs.StringVar(&prom.CAFile, "alerts-ca-file", "",
				"PEM file of the CAs that sign the certificate of --alerts-url; empty: the system's.")
			fs.BoolVar(&ocmEnabled, "ocm", false,
				"Talk to OCM when the configuration's configManager.source is OCM: sync the managed UpgradeConfig from the cluster's upgrade policies "+
					"and report policy states and service logs. Needs get on Secret openshift-config/pull-secret. Off: OCM is never contacted.")
			fs.DurationVar(&ocmTimeout, "ocm-timeout", ocmTimeout, "Bound of one OCM request.")
			fs.DurationVar(&ocmSyncInterval, "ocm-sync-interval", 0,
				"Time between two syncs of the OCM upgrade policies; 0: configManager.watchInterval.")
			fs.DurationVar(&silenceTTL, "silence-ttl", silenceTTL,
				"How far past now each maintenance silence reaches; it is renewed while its phase runs, so a stopped scheduler leaves nothing silenced past it.")
		},
		Options: func() runtime.Options { return controller.ManagerOptions(namespace) },
		Setup: func(_ context.Context, mgr manager.Manager, log logr.Logger) error {
			// Running every namespace's UpgradeConfigs would need cluster-wide
			// read access to ConfigMaps, which the chart does not grant: a
			// namespace is required.
			if namespace == "" {
				return errors.New("no --namespace and no $POD_NAMESPACE: set the namespace of the UpgradeConfigs")
			}
			log.Info("running UpgradeConfigs", "namespace", namespace, "configMap", config.ConfigMapName)
			// Its requests to Alertmanager, Prometheus and OCM name the pod,
			// as its API requests do: a stale leader's writes can be told
			// from its successor's.
			userAgent := runtime.PodUserAgent(ocm.DefaultUserAgent)
			r := &controller.Reconciler{
				Client:     mgr.GetClient(),
				Recorder:   events.NewRecorder(mgr.GetEventRecorder("upgrade-scheduler")),
				Namespace:  namespace,
				SilenceTTL: silenceTTL,
				Metrics:    metrics.New(ctrlmetrics.Registry),
			}
			if am.URL != "" {
				if silenceTTL < 2*time.Second {
					return fmt.Errorf("invalid value %s for flag --silence-ttl: too short to renew", silenceTTL)
				}
				am.API = alerts.Alertmanager
				am.UserAgent = userAgent
				ac, err := alerts.New(am)
				if err != nil {
					return err
				}
				hc, err := alerts.HTTPClient(am)
				if err != nil {
					return err
				}
				// A stale leader must not create or expire a silence.
				hc.Transport = runtime.Fenced(hc.Transport)
				sc, err := silence.NewClient(am.URL, hc, am.Timeout)
				if err != nil {
					return err
				}
				r.Alerts, r.Silences, r.Integrations = ac, sc, plan.Integrations{Silences: true}
				log.Info("Alertmanager configured", "url", am.URL)
			}
			if prom.URL != "" {
				// Prometheus (or the Thanos querier) sees every alert
				// rule's result, silenced or not, as MUO's health query
				// does; Alertmanager, when also set, keeps the silences.
				prom.API = alerts.Prometheus
				prom.UserAgent = userAgent
				ac, err := alerts.New(prom)
				if err != nil {
					return err
				}
				r.Alerts = ac
				log.Info("critical alerts read from Prometheus's alerts API", "url", prom.URL)
			}
			if ocmEnabled {
				// A stale leader must not post a notice or a policy state.
				r.OCM = &controller.OCM{Reader: mgr.GetAPIReader(), Timeout: ocmTimeout, Transport: runtime.Fenced,
					UserAgent: userAgent}
				log.Info("OCM integration on (used when configManager.source is OCM)")
			}
			// The sync runs with either source: with LOCAL it only records
			// the sync, as MUO does; without OCM integration it never
			// contacts OCM.
			if err := mgr.Add(&controller.PolicySyncer{R: r, Interval: ocmSyncInterval}); err != nil {
				return err
			}
			return r.SetupWithManager(mgr)
		},
	})
}
