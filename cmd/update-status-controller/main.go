// Command update-status-controller publishes where an OpenShift update
// stands as the UpgradeStatus singleton and one NodeProgressInsight per node.
package main

import (
	"context"
	"flag"
	"os"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/upshift-io/upshift/libs/runtime"
	"github.com/upshift-io/upshift/services/updatestatus/controller"
)

func main() {
	namespace := os.Getenv("POD_NAMESPACE")
	runtime.MainProcess(runtime.Component{
		Name: "update-status-controller",
		Flags: func(fs *flag.FlagSet) {
			fs.StringVar(&namespace, "namespace", namespace,
				"Namespace of the "+controller.PrototypeConfigMap+" ConfigMap (default $POD_NAMESPACE); empty: never write it.")
		},
		Options: func() runtime.Options { return controller.ManagerOptions(namespace) },
		Setup: func(_ context.Context, mgr manager.Manager, log logr.Logger) error {
			if namespace == "" {
				log.Info("no --namespace and no $POD_NAMESPACE: the prototype ConfigMap is not kept")
			}
			return (&controller.Reconciler{
				Client:    mgr.GetClient(),
				Recorder:  mgr.GetEventRecorder("update-status-controller"),
				Namespace: namespace,
			}).SetupWithManager(mgr)
		},
	})
}
