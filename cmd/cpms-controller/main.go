// Command cpms-controller keeps the control-plane Machines of
// openshift-machine-api at the spec of the ControlPlaneMachineSet `cluster`:
// it replaces them one index at a time (RollingUpdate, surge 1) or as people
// delete them (OnDelete), deletes an old machine only once its replacement is
// Running with a Ready Node and adopted by the etcd operator, and reports the
// set's status, Events and upshift_cpms_* metrics. The same process serves
// the set's validating admission webhook, on every replica (leader or not).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/upshift-io/upshift/libs/events"
	"github.com/upshift-io/upshift/libs/runtime"
	"github.com/upshift-io/upshift/services/cpms/controller"
	"github.com/upshift-io/upshift/services/cpms/metrics"
	"github.com/upshift-io/upshift/services/cpms/plan"
	"github.com/upshift-io/upshift/services/cpms/webhook"
)

// Names of the serving certificate and key in --webhook-cert-dir: the keys of
// a kubernetes.io/tls Secret, which the chart (or cert-manager) writes.
const (
	webhookCertName = "tls.crt"
	webhookKeyName  = "tls.key"
)

func main() {
	cfg := plan.DefaultConfig()
	namespace := controller.Namespace
	webhookPort := 9443
	webhookCertDir := ""
	webhookHost := ""
	aro := false
	generateSet := false
	runtime.MainProcess(runtime.Component{
		Name: "cpms-controller",
		Flags: func(fs *flag.FlagSet) {
			fs.StringVar(&namespace, "namespace", namespace,
				"Namespace of the ControlPlaneMachineSet `cluster` and its Machines. Only "+controller.Namespace+
					" is supported: it is the upstream operator's, and the one the chart's RBAC grants.")
			fs.DurationVar(&cfg.NodeGracePeriod, "node-grace-period", cfg.NodeGracePeriod,
				"A Running machine whose Node went NotReady less than this long ago still counts as ready (a reboot does not flip Available).")
			fs.DurationVar(&cfg.ProgressDeadline, "progress-deadline", cfg.ProgressDeadline,
				"A replacement not Ready this long after its creation makes the set Degraded (ReplacementTimedOut) and holds the rollout. 0 turns it off.")
			fs.BoolVar(&cfg.Remediation.Enabled, "remediation", cfg.Remediation.Enabled,
				"Delete a failed or timed-out replacement and create it again, up to --remediation-max-retries times per index and template.")
			fs.IntVar(&cfg.Remediation.MaxRetries, "remediation-max-retries", cfg.Remediation.MaxRetries,
				"Retries of one index's replacement, for one template, before the controller gives up (kept in an annotation on the set, so restarts do not reset it).")
			fs.DurationVar(&cfg.Remediation.RetryPeriod, "remediation-retry-period", cfg.Remediation.RetryPeriod,
				"Wait between deleting a failed replacement and creating the next.")
			fs.BoolVar(&aro, "aro", aro,
				"The cluster is Azure Red Hat OpenShift: watch its Cluster `cluster` (aro.openshift.io), whose operator deletes an Active set unless the flag "+plan.AROCPMSFlag+" is true, and report that instead of acting on the set.")
			fs.BoolVar(&generateSet, "generate-set", generateSet,
				"While no upstream operator runs and the cluster has no Active set, keep an Inactive ControlPlaneMachineSet `cluster` generated from the control-plane machines (as the upstream operator's generator does), for an administrator to review and activate.")
			fs.IntVar(&webhookPort, "webhook-port", webhookPort,
				"Port the validating admission webhook listens on (HTTPS). 0 turns the webhook server off.")
			fs.StringVar(&webhookHost, "webhook-host", webhookHost,
				"Address the webhook listens on. Empty: every interface.")
			fs.StringVar(&webhookCertDir, "webhook-cert-dir", webhookCertDir,
				"Folder with tls.crt and tls.key for the webhook (a mounted kubernetes.io/tls Secret), reloaded when they change. Required with --webhook-port.")
		},
		Options: func() runtime.Options {
			opts := controller.ManagerOptions()
			if aro {
				opts = controller.WithARO(opts)
			}
			if webhookPort != 0 {
				opts.WebhookServer = ctrlwebhook.NewServer(ctrlwebhook.Options{
					Host: webhookHost, Port: webhookPort, CertDir: webhookCertDir,
					CertName: webhookCertName, KeyName: webhookKeyName,
				})
			}
			return opts
		},
		Setup: func(_ context.Context, mgr manager.Manager, log logr.Logger) error {
			if err := validate(namespace, cfg, webhookPort, webhookCertDir); err != nil {
				return err
			}
			if cfg.Remediation.Enabled && cfg.ProgressDeadline == 0 {
				log.Info("--remediation with --progress-deadline=0 retries only replacements in phase Failed")
			}
			if webhookPort != 0 {
				// Uncached: a create or an activation must count every
				// machine there is, and the webhook may answer on a replica
				// whose caches have not synced.
				webhook.Register(mgr.GetWebhookServer(), mgr.GetScheme(), mgr.GetAPIReader(), mgr.GetClient())
			}
			log.Info("managing the control plane", "namespace", namespace,
				"progressDeadline", cfg.ProgressDeadline.String(), "nodeGracePeriod", cfg.NodeGracePeriod.String(),
				"remediation", cfg.Remediation.Enabled, "maxRetries", cfg.Remediation.MaxRetries,
				"retryPeriod", cfg.Remediation.RetryPeriod.String(), "webhookPort", webhookPort, "aro", aro, "generateSet", generateSet)
			if generateSet {
				if err := (&controller.Generator{
					Client:   mgr.GetClient(),
					Recorder: events.NewRecorder(mgr.GetEventRecorder("cpms-controller")),
				}).SetupWithManager(mgr); err != nil {
					return err
				}
			}
			return (&controller.Reconciler{
				Client:   mgr.GetClient(),
				Recorder: events.NewRecorder(mgr.GetEventRecorder("cpms-controller")),
				Metrics:  metrics.New(ctrlmetrics.Registry),
				Config:   cfg,
				ARO:      aro,
			}).SetupWithManager(mgr)
		},
	})
}

// validate checks the flags the flag package cannot; errors name the flag.
func validate(namespace string, cfg plan.Config, webhookPort int, certDir string) error {
	if namespace != controller.Namespace {
		return fmt.Errorf("invalid value %q for flag --namespace: only %s is supported", namespace, controller.Namespace)
	}
	for name, d := range map[string]time.Duration{
		"node-grace-period": cfg.NodeGracePeriod, "progress-deadline": cfg.ProgressDeadline,
		"remediation-retry-period": cfg.Remediation.RetryPeriod,
	} {
		if d < 0 {
			return fmt.Errorf("invalid value %s for flag --%s: must not be negative", d, name)
		}
	}
	if cfg.Remediation.MaxRetries < 0 {
		return fmt.Errorf("invalid value %d for flag --remediation-max-retries: must not be negative", cfg.Remediation.MaxRetries)
	}
	if webhookPort < 0 || webhookPort > 65535 {
		return fmt.Errorf("invalid value %d for flag --webhook-port: must be 0 to 65535", webhookPort)
	}
	if webhookPort == 0 {
		return nil
	}
	if certDir == "" {
		// controller-runtime would look in a temp folder and fail later,
		// less clearly.
		return errors.New("no --webhook-cert-dir: the webhook needs the certificate the apiserver trusts (or --webhook-port=0)")
	}
	for _, name := range []string{webhookCertName, webhookKeyName} {
		if _, err := os.Stat(filepath.Join(certDir, name)); err != nil {
			return fmt.Errorf("--webhook-cert-dir: %w", err)
		}
	}
	return nil
}
