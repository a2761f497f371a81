// Command upgrade-scheduler runs the UpgradeConfigs of its namespace: at
// upgradeAt, inside a maintenance window when any are set, it checks the
// cluster, reserves capacity, points ClusterVersion at the target, follows
// the control plane and the workers, checks again and cleans up.
package main

import (
	"context"
	"errors"
	"flag"
	"os"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/upshift-io/upshift/libs/runtime"
	"github.com/upshift-io/upshift/services/upgradescheduler/config"
	"github.com/upshift-io/upshift/services/upgradescheduler/controller"
)

func main() {
	namespace := os.Getenv("POD_NAMESPACE")
	runtime.MainProcess(runtime.Component{
		Name: "upgrade-scheduler",
		Flags: func(fs *flag.FlagSet) {
			fs.StringVar(&namespace, "namespace", namespace,
				"Namespace of the UpgradeConfigs to run and of the "+config.ConfigMapName+" ConfigMap (default $POD_NAMESPACE).")
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
			return (&controller.Reconciler{
				Client:    mgr.GetClient(),
				Recorder:  mgr.GetEventRecorder("upgrade-scheduler"),
				Namespace: namespace,
			}).SetupWithManager(mgr)
		},
	})
}
