// Command node-gate runs MutexRunConfigs: every worker node of the gated
// MachineConfigPools updates only after its owners' pre-update hook Jobs
// ran, one node (or maxUnavailable) at a time, with post-update hooks once
// the machine-config operator reports it done; drains of released nodes
// that a PodDisruptionBudget blocks past a timeout are forced pod by pod.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/upshift-io/upshift/libs/alerts"
	"github.com/upshift-io/upshift/libs/events"
	"github.com/upshift-io/upshift/libs/runtime"
	"github.com/upshift-io/upshift/services/nodegate/controller"
	"github.com/upshift-io/upshift/services/nodegate/metrics"
	"github.com/upshift-io/upshift/services/nodegate/plan"
)

func main() {
	namespace := os.Getenv("POD_NAMESPACE")
	serviceAccount := os.Getenv("POD_SERVICE_ACCOUNT")
	var jobNamespaces, ruleJobNamespaces, gatedPools string
	var alertsCfg alerts.Config
	var alertsAPI string
	statusInterval := controller.DefaultStatusWriteInterval
	runtime.MainProcess(runtime.Component{
		Name: "node-gate",
		Flags: func(fs *flag.FlagSet) {
			fs.StringVar(&namespace, "namespace", namespace,
				"Namespace node-gate runs in (default $POD_NAMESPACE); hook Jobs may run there unless --job-namespaces says otherwise.")
			fs.StringVar(&serviceAccount, "service-account", serviceAccount,
				"node-gate's own ServiceAccount in --namespace (default $POD_SERVICE_ACCOUNT): a MutexRule whose hook Jobs would run as it there is refused (ServiceAccountNotAllowed), behind the chart's admission policy. Empty: only the policy refuses them.")
			fs.StringVar(&jobNamespaces, "job-namespaces", "",
				"Comma-separated namespaces where MutexRules may run hook Jobs (the chart grants Jobs only there). Empty: --namespace.")
			fs.StringVar(&ruleJobNamespaces, "rule-job-namespaces", "",
				"By the namespace of a MutexRule, the other namespaces its hook Jobs may run in, as ns=a,b;ns2=c (the chart's ruleJobNamespaces). A rule's Jobs run in its own namespace otherwise; a rule naming another is blocked (JobNamespaceNotAllowed).")
			fs.StringVar(&gatedPools, "gated-pools", "",
				"Comma-separated source MachineConfigPools runs may gate (the chart lets node-gate delete only their gate pools); a run targeting another is blocked (PoolNotGated) before it changes anything. Empty: any.")
			fs.StringVar(&alertsCfg.URL, "alerts-url", "",
				"Base URL of the alerts API for runs with a healthGate, e.g. https://thanos-querier.openshift-monitoring.svc:9091; empty: such runs wait (fail closed).")
			fs.StringVar(&alertsAPI, "alerts-api", "",
				`API at --alerts-url: "prometheus" or "alertmanager"; empty: detected from the URL.`)
			fs.DurationVar(&alertsCfg.Timeout, "alerts-timeout", alerts.DefaultTimeout, "Bound of one read of the alerts.")
			fs.StringVar(&alertsCfg.BearerTokenFile, "alerts-bearer-token-file", "", "File whose content is sent as a bearer token to the alerts API.")
			fs.StringVar(&alertsCfg.CAFile, "alerts-ca-file", "", "PEM file of the CAs that sign the alerts API's certificate; empty: the system's.")
			fs.DurationVar(&statusInterval, "status-write-interval", statusInterval,
				"At most one write per run in this interval of the run statuses that only record progress (a node started, released or done); statuses that must be stored before node-gate acts (a new round, a pool's original) are written at once.")
		},
		Options: func() runtime.Options {
			return runtime.Options{Cache: cacheOptions(jobNamespaces, namespace)}
		},
		Setup: func(_ context.Context, mgr manager.Manager, log logr.Logger) error {
			nss := jobNamespaceList(jobNamespaces, namespace)
			if len(nss) == 0 {
				return errors.New("no --job-namespaces, no --namespace and no $POD_NAMESPACE: say where hook Jobs run")
			}
			others, err := parseRuleJobNamespaces(ruleJobNamespaces)
			if err != nil {
				return err
			}
			if statusInterval <= 0 {
				return errors.New("--status-write-interval must be positive: it bounds the status writes of each run")
			}
			places := plan.JobPlaces{Namespaces: nss, ForRuleNamespace: others}
			if serviceAccount != "" {
				places.Own = types.NamespacedName{Namespace: namespace, Name: serviceAccount}
			} else {
				log.Info("own ServiceAccount not known (no --service-account, no $POD_SERVICE_ACCOUNT): only the admission policy refuses hooks that would run as it")
			}
			r := &controller.Reconciler{
				Client:     mgr.GetClient(),
				Recorder:   events.NewRecorder(mgr.GetEventRecorder("node-gate")),
				Metrics:    metrics.New(ctrlmetrics.Registry),
				JobPlaces:  places,
				GatedPools: splitList(gatedPools),

				StatusWriteInterval: statusInterval,
			}
			if alertsCfg.URL != "" {
				alertsCfg.API = alerts.API(alertsAPI)
				// The reads name the pod, as its API requests do.
				alertsCfg.UserAgent = runtime.PodUserAgent("upshift-node-gate")
				c, err := alerts.New(alertsCfg)
				if err != nil {
					return err
				}
				r.Alerts = c
			}
			log.Info("gating nodes", "jobNamespaces", nss, "ruleJobNamespaces", others, "serviceAccount", places.Own.String(), "gatedPools", r.GatedPools, "alerts", alertsCfg.URL != "",
				"statusWriteInterval", statusInterval.String())
			if err := r.SetupWithManager(mgr); err != nil {
				return err
			}
			return (&controller.ObjectStatus{Client: mgr.GetClient(), JobPlaces: places}).SetupWithManager(mgr)
		},
	})
}

// cacheOptions watches hook Jobs only where the chart lets node-gate see
// them: a cluster-wide Job informer would be refused and never sync.
func cacheOptions(jobNamespaces, namespace string) cache.Options {
	nss := map[string]cache.Config{}
	for _, ns := range jobNamespaceList(jobNamespaces, namespace) {
		nss[ns] = cache.Config{}
	}
	return cache.Options{ByObject: controller.CacheByObjectIn(nss)}
}

func jobNamespaceList(flagValue, namespace string) []string {
	out := splitList(flagValue)
	if len(out) == 0 && namespace != "" {
		out = []string{namespace}
	}
	return out
}

// parseRuleJobNamespaces reads --rule-job-namespaces: ns=a,b;ns2=c.
func parseRuleJobNamespaces(flagValue string) (map[string][]string, error) {
	out := map[string][]string{}
	for _, entry := range strings.Split(flagValue, ";") {
		if strings.TrimSpace(entry) == "" {
			continue
		}
		ns, list, ok := strings.Cut(entry, "=")
		ns, others := strings.TrimSpace(ns), splitList(list)
		if !ok || ns == "" || len(others) == 0 {
			return nil, fmt.Errorf("--rule-job-namespaces: %q is not <rule namespace>=<job namespace>[,<job namespace>...]", entry)
		}
		out[ns] = append(out[ns], others...)
	}
	return out, nil
}

// splitList reads a comma-separated flag, blanks dropped.
func splitList(flagValue string) []string {
	var out []string
	for _, v := range strings.Split(flagValue, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}
