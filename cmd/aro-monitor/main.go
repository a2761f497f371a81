// Command aro-monitor watches an Azure Red Hat OpenShift cluster from the
// inside and writes what it finds as conditions on ARO's Cluster object.
//
// One image, two roles. --role=master (one leader-elected Deployment) checks
// the cluster's Azure credentials, the association of every cluster subnet
// with the cluster's network security group (re-associating a detached one
// within guard rails), egress from where it runs (InternetReachableFromMaster),
// and folds the worker agents' results into InternetReachableFromWorker.
// --role=worker (a Deployment per worker pool) finds its own subnet at start
// from its Node, the Node's Machine and the Machine's provider spec, and
// probes egress from there while it holds that subnet's Lease.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/go-logr/logr"
	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	operatorv1 "github.com/openshift/api/operator/v1"
	"golang.org/x/net/http/httpproxy"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	arov1alpha1 "github.com/upshift-io/upshift/api/aro/v1alpha1"
	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"
	"github.com/upshift-io/upshift/libs/events"
	"github.com/upshift-io/upshift/libs/runtime"
	"github.com/upshift-io/upshift/libs/scheme"
	"github.com/upshift-io/upshift/services/aromonitor/azure"
	"github.com/upshift-io/upshift/services/aromonitor/configcheck"
	"github.com/upshift-io/upshift/services/aromonitor/controller"
	"github.com/upshift-io/upshift/services/aromonitor/metrics"
	"github.com/upshift-io/upshift/services/aromonitor/ownership"
	"github.com/upshift-io/upshift/services/aromonitor/probe"
	"github.com/upshift-io/upshift/services/aromonitor/subnets"
)

// MachineNamespace holds the Machines and MachineSets, on every OpenShift
// cluster.
const MachineNamespace = "openshift-machine-api"

// DefaultCredentials is the Secret ARO's own operator takes its Azure
// identity from (the cloud-credential-operator fills it from the operator's
// CredentialsRequest): the identity the checks are about.
const DefaultCredentials = "openshift-azure-operator/azure-cloud-credentials"

type options struct {
	role         string
	credentials  string
	nodeName     string
	armEndpoint  string
	armAudience  string
	aadAuthority string
	kubeconfig   *flag.Flag
	workerSubnet string
	resolveErr   error
	// The egress probes' proxy: given to the prober alone, so the
	// Kubernetes client (and the Azure clients) never go through it.
	probeHTTPSProxy, probeHTTPProxy, probeNoProxy string
}

func main() {
	o := &options{nodeName: os.Getenv("NODE_NAME")}
	runtime.MainProcess(runtime.Component{
		Name: "aro-monitor",
		Flags: func(fs *flag.FlagSet) {
			fs.StringVar(&o.role, "role", "", "master: the leader-elected checks (credentials, NSG, egress from the control plane, the worker condition); "+
				"worker: an egress agent for the subnet of the node it runs on.")
			fs.StringVar(&o.credentials, "credentials-secret", DefaultCredentials,
				"<namespace>/<name> of the Secret with the cluster's Azure identity (azure_client_id, azure_tenant_id, azure_client_secret or azure_federated_token_file). Master role.")
			fs.StringVar(&o.nodeName, "node-name", o.nodeName,
				"The node this process runs on (default $NODE_NAME, from the downward API): the worker agent's subnet is its Machine's.")
			fs.StringVar(&o.armEndpoint, "arm-endpoint", "",
				"Azure Resource Manager URL for a private cloud or a test endpoint; empty: the cloud of the Cluster's spec.azEnvironment. Set with --aad-authority-host.")
			fs.StringVar(&o.armAudience, "arm-audience", "https://management.core.windows.net/", "Token audience of --arm-endpoint.")
			fs.StringVar(&o.aadAuthority, "aad-authority-host", "", "Azure AD authority URL for --arm-endpoint's cloud.")
			fs.StringVar(&o.probeHTTPSProxy, "probe-https-proxy", "",
				"Proxy for the egress probes of https URLs (the cluster-wide proxy's httpsProxy). Only the probes use it; the Kubernetes and Azure clients do not. Empty: direct.")
			fs.StringVar(&o.probeHTTPProxy, "probe-http-proxy", "", "Proxy for the egress probes of http URLs (the cluster-wide proxy's httpProxy).")
			fs.StringVar(&o.probeNoProxy, "probe-no-proxy", "", "Hosts, domains and CIDRs the egress probes reach directly (the cluster-wide proxy's noProxy).")
			// Read back after parsing: the worker's Lease name depends on
			// the cluster, before the manager exists.
			o.kubeconfig = fs.Lookup("kubeconfig")
		},
		Options: func() runtime.Options {
			opts := runtime.Options{Cache: cacheOptions(o)}
			if o.role == string(amv1alpha1.RoleWorker) {
				o.workerSubnet, o.resolveErr = resolveSubnet(context.Background(), o)
				if o.resolveErr == nil {
					opts.LeaderElectionID = subnets.AgentLeaseName(o.workerSubnet)
				}
			}
			return opts
		},
		Setup: func(_ context.Context, mgr manager.Manager, log logr.Logger) error {
			if err := o.validate(); err != nil {
				return err
			}
			m := metrics.New(ctrlmetrics.Registry)
			prober := &probe.Prober{Proxy: o.probeProxy()}
			if o.role == string(amv1alpha1.RoleWorker) {
				if o.resolveErr != nil {
					return o.resolveErr
				}
				log.Info("probing egress for a worker subnet", "subnet", o.workerSubnet, "node", o.nodeName,
					"lease", subnets.AgentLeaseName(o.workerSubnet))
				return (&controller.ProbeReconciler{Client: mgr.GetClient(), Prober: prober,
					Role: amv1alpha1.RoleWorker, Name: o.workerSubnet, Node: o.nodeName,
					Observe: observeRound(m, amv1alpha1.CheckInternetWorker)}).SetupWithManager(mgr)
			}
			return setupMaster(mgr, log, o, m, prober)
		},
	})
}

func (o *options) validate() error {
	switch o.role {
	case string(amv1alpha1.RoleMaster), string(amv1alpha1.RoleWorker):
	default:
		return fmt.Errorf("invalid value %q for flag --role: must be master or worker", o.role)
	}
	if _, err := parseKey(o.credentials); err != nil {
		return err
	}
	if (o.armEndpoint == "") != (o.aadAuthority == "") {
		return errors.New("flags --arm-endpoint and --aad-authority-host go together")
	}
	if o.role == string(amv1alpha1.RoleWorker) && o.nodeName == "" {
		return errors.New("the worker role needs --node-name (or $NODE_NAME) to find its subnet")
	}
	return nil
}

func parseKey(s string) (types.NamespacedName, error) {
	ns, name, ok := strings.Cut(s, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return types.NamespacedName{}, fmt.Errorf("invalid value %q for flag --credentials-secret: want <namespace>/<name>", s)
	}
	return types.NamespacedName{Namespace: ns, Name: name}, nil
}

func setupMaster(mgr manager.Manager, log logr.Logger, o *options, m *metrics.Metrics, prober *probe.Prober) error {
	creds, _ := parseKey(o.credentials)
	// The ARM budget is the MonitorConfig's spec.arm.requestsPerMinute,
	// applied by the NSG check each pass.
	fo := azure.Options{Observe: m.ARMRequest}
	if o.armEndpoint != "" {
		fo.Cloud = &cloud.Configuration{
			ActiveDirectoryAuthorityHost: strings.TrimSuffix(o.aadAuthority, "/") + "/",
			Services: map[cloud.ServiceName]cloud.ServiceConfiguration{
				cloud.ResourceManager: {Endpoint: o.armEndpoint, Audience: o.armAudience},
			},
		}
	}
	az := azure.NewFactory(fo)
	recorder := events.NewRecorder(mgr.GetEventRecorder("aro-monitor"))
	log.Info("monitoring the cluster", "credentials", creds.String(), "armEndpoint", o.armEndpoint, "node", o.nodeName)
	for _, r := range []interface{ SetupWithManager(manager.Manager) error }{
		&controller.NSGReconciler{Client: mgr.GetClient(), Recorder: recorder, Azure: az, Credentials: creds,
			MachineNamespace: MachineNamespace, Observe: m.Remediation},
		&controller.CredentialsReconciler{Client: mgr.GetClient(), Recorder: recorder, Azure: az, Credentials: creds},
		&controller.ProbeReconciler{Client: mgr.GetClient(), Prober: prober, Role: amv1alpha1.RoleMaster,
			Name: string(amv1alpha1.RoleMaster), Node: o.nodeName, Observe: observeRound(m, amv1alpha1.CheckInternetMaster), Recorder: recorder},
		&controller.WorkerConditionReconciler{Client: mgr.GetClient(), Recorder: recorder, MachineNamespace: MachineNamespace},
		&controller.ConfigReconciler{Client: mgr.GetClient()},
		&controller.MachinesReconciler{Client: mgr.GetClient(), Recorder: recorder, MachineNamespace: MachineNamespace},
		&controller.ClusterConfigReconciler{Client: mgr.GetClient(), Recorder: recorder},
		&controller.WorkloadsReconciler{Client: mgr.GetClient(), Reader: mgr.GetAPIReader()},
		&controller.StatusMetricsReconciler{Client: mgr.GetClient(), Metrics: m},
	} {
		if err := r.SetupWithManager(mgr); err != nil {
			return err
		}
	}
	return nil
}

// observeRound feeds a probe round to the metrics: per-phase latencies and
// failures, and the vantage point's last success when every URL was reached.
func observeRound(m *metrics.Metrics, check amv1alpha1.CheckName) func(amv1alpha1.VantagePoint, []probe.Result) {
	return func(vp amv1alpha1.VantagePoint, results []probe.Result) {
		m.Round(vp.Role, results)
		for _, r := range results {
			if !r.OK() {
				return
			}
		}
		if vp.LastCheckTime != nil {
			m.Success(check, vp.Name, vp.LastCheckTime.Time)
		}
	}
}

// probeProxy is the proxy the egress probes take, from the --probe-*
// flags; nil when none is set. It is not read from HTTPS_PROXY and friends:
// client-go honours those too, and would send the apiserver's traffic
// through the proxy.
func (o *options) probeProxy() func(*url.URL) (*url.URL, error) {
	if o.probeHTTPSProxy == "" && o.probeHTTPProxy == "" {
		return nil
	}
	cfg := httpproxy.Config{HTTPSProxy: o.probeHTTPSProxy, HTTPProxy: o.probeHTTPProxy, NoProxy: o.probeNoProxy}
	return cfg.ProxyFunc()
}

// cacheOptions keeps the informers to what each role reads: the Cluster and
// MonitorConfig singletons by name; for the master, the Machines and
// MachineSets of openshift-machine-api, the credentials Secret, the default
// IngressController, the DNS configuration and the ClusterVersion by name,
// and the Deployments of ARO operator's namespace. The Workloads check lists
// DaemonSets and pods uncached.
func cacheOptions(o *options) cache.Options {
	byName := func(name string) cache.ByObject {
		return cache.ByObject{Field: fields.OneTermEqualSelector("metadata.name", name)}
	}
	objs := map[client.Object]cache.ByObject{
		&arov1alpha1.Cluster{}:      byName(arov1alpha1.SingletonName),
		&amv1alpha1.MonitorConfig{}: byName(amv1alpha1.SingletonName),
	}
	if o.role != string(amv1alpha1.RoleWorker) {
		machines := cache.ByObject{Namespaces: map[string]cache.Config{MachineNamespace: {}}}
		objs[&machinev1beta1.Machine{}] = machines
		objs[&machinev1beta1.MachineSet{}] = machines
		// ARO operator's deployments decide who owns each check: only
		// their replicas and readiness are read, so the pod template is
		// dropped from the cache.
		objs[&appsv1.Deployment{}] = cache.ByObject{
			Namespaces: map[string]cache.Config{ownership.Namespace: {}},
			Transform: func(obj any) (any, error) {
				if d, ok := obj.(*appsv1.Deployment); ok {
					d.Spec.Template = corev1.PodTemplateSpec{}
					d.ManagedFields = nil
				}
				return obj, nil
			},
		}
		// DefaultIngressCertificate and DefaultClusterDNS read one object
		// each.
		objs[&operatorv1.IngressController{}] = cache.ByObject{Field: fields.OneTermEqualSelector("metadata.name", configcheck.IngressName),
			Namespaces: map[string]cache.Config{configcheck.IngressNamespace: {}}}
		objs[&operatorv1.DNS{}] = byName(configcheck.DNSName)
		objs[&configv1.ClusterVersion{}] = byName(controller.ClusterVersionName)
		if key, err := parseKey(o.credentials); err == nil {
			secret := byName(key.Name)
			secret.Namespaces = map[string]cache.Config{key.Namespace: {}}
			objs[&corev1.Secret{}] = secret
		}
	}
	return cache.Options{ByObject: objs}
}

// resolveSubnet finds the worker agent's subnet: its Node names its Machine
// (machine.openshift.io/machine), whose Azure provider spec names the
// subnet. Two uncached reads, once at start.
func resolveSubnet(ctx context.Context, o *options) (string, error) {
	if o.nodeName == "" {
		return "", errors.New("the worker role needs --node-name (or $NODE_NAME) to find its subnet")
	}
	var kubeconfig string
	if o.kubeconfig != nil {
		kubeconfig = o.kubeconfig.Value.String()
	}
	cfg, err := runtime.RestConfig(&runtime.Flags{Kubeconfig: kubeconfig})
	if err != nil {
		return "", err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "aro-monitor/resolve-subnet"
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return "", err
	}
	node := &corev1.Node{}
	if err := c.Get(ctx, client.ObjectKey{Name: o.nodeName}, node); err != nil {
		return "", fmt.Errorf("reading this agent's Node %s: %w", o.nodeName, err)
	}
	ref := node.Annotations[subnets.MachineAnnotation]
	ns, name, ok := strings.Cut(ref, "/")
	if !ok || ns == "" || name == "" {
		return "", fmt.Errorf("node %s has no %s annotation naming its Machine (got %q)", o.nodeName, subnets.MachineAnnotation, ref)
	}
	m := &machinev1beta1.Machine{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, m); err != nil {
		return "", fmt.Errorf("reading node %s's Machine %s: %w", o.nodeName, ref, err)
	}
	return subnets.OfMachine(m)
}
