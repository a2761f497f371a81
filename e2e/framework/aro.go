package framework

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"
	"github.com/upshift-io/upshift/libs/testenv"
	"github.com/upshift-io/upshift/tools/azuresim"
	"github.com/upshift-io/upshift/tools/egresssim"
)

// The simulated ARO cluster's Azure side, matching the Cluster object of
// services/aromonitor/validation/testdata/aro-cluster.yaml (ARO's resource
// provider's object, applied unchanged): its subscription, cluster resource
// group and infra ID give the NSG; its VNet holds the subnets.
const (
	AROTenant       = "11111111-1111-1111-1111-111111111111"
	AROClientID     = "22222222-2222-2222-2222-222222222222"
	AROSubscription = "33333333-3333-3333-3333-333333333333"
	AROSecret       = "first-secret"
	AROSubnetPrefix = "/subscriptions/" + AROSubscription + "/resourceGroups/vnet-rg/providers/Microsoft.Network/virtualNetworks/prod-vnet/subnets/"
	AROMasterSubnet = AROSubnetPrefix + "master-subnet"
	AROWorkerSubnet = AROSubnetPrefix + "worker-subnet"
	ARONSG          = "/subscriptions/" + AROSubscription + "/resourceGroups/aro-prod-1/providers/Microsoft.Network/networkSecurityGroups/prod-1-x7k2p-nsg"
	// AROWorkerNode is the node the worker agent runs on.
	AROWorkerNode = "prod-1-worker-eastus1-abcde"
	AROMasterNode = "prod-1-master-0"
	// AROClusterID is the ClusterVersion's cluster ID; the default
	// IngressController serves ARO's certificate named after it.
	AROClusterID = "6d8f4a8e-1b2c-4c1e-9a43-0f1e2d3c4b5a"
	// ARODNSUpstream is a custom upstream the DNS operator forwards to.
	ARODNSUpstream = "10.0.0.10"
	// AROCredentials is the chart's default credentials Secret.
	AROCredentialsNamespace = "openshift-azure-operator"
	AROCredentialsName      = "azure-cloud-credentials"
	AROMachineNamespace     = "openshift-machine-api"
)

// AROEgressHosts are the hosts of the Cluster's spec.internetChecker.urls.
var AROEgressHosts = []string{"arosvc.azurecr.io", "login.microsoftonline.com", "management.azure.com", "gcs.prod.monitoring.core.windows.net"}

// AROCluster is a simulated ARO cluster around a real kube-apiserver: a
// local ARM and Azure AD (azuresim), a DNS server and one proxy per role
// (egresssim) in front of a local TLS server that answers for the egress
// hosts, and aro-monitor's two roles running as their chart's
// ServiceAccounts.
type AROCluster struct {
	Env   *testenv.Env
	Chart *Chart
	// WorkerLeaseNamespace holds the worker agents' Leases (the chart's).
	WorkerLeaseNamespace string
	ARM                  *azuresim.Server
	DNS                  *egresssim.DNS
	Targets              *httptest.Server
	// TargetHits counts the probes that reached the targets.
	TargetHits *atomic.Int64
	// MasterProxy and WorkerProxy are each role's HTTPS_PROXY.
	MasterProxy, WorkerProxy *egresssim.Proxy
	Master, Worker           *Running
	// MasterSA and WorkerSA are the chart's ServiceAccounts.
	MasterSA, WorkerSA string
	Namespace          string

	dir              string
	binary           string
	masterKubeconfig string
	workerKubeconfig string
}

// StartAROCluster seeds the cluster and starts both roles of binary (the
// aro-monitor command) with the MonitorConfig spec given, release "aro" in
// namespace.
func StartAROCluster(ctx context.Context, env *testenv.Env, binary, namespace, dir string, spec amv1alpha1.MonitorConfigSpec) (*AROCluster, error) {
	a := &AROCluster{Env: env, Namespace: namespace, dir: dir, binary: binary, TargetHits: &atomic.Int64{}}
	for _, ns := range []string{namespace, AROMachineNamespace, AROCredentialsNamespace} {
		if err := env.CreateNamespace(ctx, ns); err != nil {
			return nil, err
		}
	}
	var err error
	// Both roles serve /metrics from the chart's certificate Secret.
	if a.Chart, err = RenderChart("aro-monitor", "aro", namespace, "metrics.certSecret="+MetricsCertSecret); err != nil {
		return nil, err
	}
	if a.Chart.MetricsCert, err = a.Chart.IssueMetricsCert(dir); err != nil {
		return nil, err
	}
	// The worker agents elect in a namespace of their own, which the chart
	// creates with the release.
	for _, ns := range a.Chart.Kinds("Namespace") {
		a.WorkerLeaseNamespace = ns.GetName()
		if err := env.CreateNamespace(ctx, ns.GetName()); err != nil {
			return nil, err
		}
	}
	if a.WorkerLeaseNamespace == "" {
		return nil, errors.New("the aro-monitor chart renders no Namespace for the worker Leases")
	}
	if err := a.Chart.InstallIdentity(ctx, env.Client); err != nil {
		return nil, err
	}
	for _, sa := range a.Chart.Kinds("ServiceAccount") {
		switch {
		case strings.HasSuffix(sa.GetName(), "-master"):
			a.MasterSA = sa.GetName()
		case strings.HasSuffix(sa.GetName(), "-worker"):
			a.WorkerSA = sa.GetName()
		}
	}
	if a.MasterSA == "" || a.WorkerSA == "" {
		return nil, errors.New("the aro-monitor chart renders no -master and -worker ServiceAccounts")
	}
	if a.masterKubeconfig, err = env.ServiceAccountKubeconfig(ctx, namespace, a.MasterSA); err != nil {
		return nil, err
	}
	if a.workerKubeconfig, err = env.ServiceAccountKubeconfig(ctx, namespace, a.WorkerSA); err != nil {
		return nil, err
	}

	a.ARM = azuresim.Start()
	a.ARM.AddApp(azuresim.App{Tenant: AROTenant, ClientID: AROClientID, Secret: AROSecret})
	a.ARM.AddNSG(ARONSG)
	a.ARM.AddSubnet(AROMasterSubnet, "10.0.0.0/23", ARONSG)
	a.ARM.AddSubnet(AROWorkerSubnet, "10.0.2.0/23", ARONSG)
	// As an ARO install leaves them: with ARO's service endpoints.
	for _, s := range []string{AROMasterSubnet, AROWorkerSubnet} {
		a.ARM.SetSubnetServiceEndpoints(s, "Microsoft.ContainerRegistry", "Microsoft.Storage")
	}

	if a.DNS, err = egresssim.StartDNS(); err != nil {
		a.Close()
		return nil, err
	}
	cert, pemBytes, err := selfSigned(AROEgressHosts)
	if err != nil {
		a.Close()
		return nil, err
	}
	// Any response is reachable, as for ARO: the registry answers 401.
	a.Targets = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		a.TargetHits.Add(1)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	a.Targets.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	a.Targets.StartTLS()
	_, port, _ := net.SplitHostPort(a.Targets.Listener.Addr().String())
	a.MasterProxy, a.WorkerProxy = egresssim.StartProxy(a.DNS.Resolver()), egresssim.StartProxy(a.DNS.Resolver())
	for _, h := range AROEgressHosts {
		a.DNS.Set(h, netip.MustParseAddr("127.0.0.1"))
		for _, p := range []*egresssim.Proxy{a.MasterProxy, a.WorkerProxy} {
			p.Route(h+":443", h+":"+port)
		}
	}
	// The processes trust the targets and the local ARM and AAD through
	// SSL_CERT_FILE, as a cluster's trusted CA bundle.
	var bundle bytes.Buffer
	bundle.Write(pemBytes)
	_ = pem.Encode(&bundle, &pem.Block{Type: "CERTIFICATE", Bytes: a.ARM.Certificate().Raw})
	if err := os.WriteFile(filepath.Join(dir, "ca-bundle.pem"), bundle.Bytes(), 0o600); err != nil {
		a.Close()
		return nil, err
	}
	if err := a.seed(ctx, spec); err != nil {
		a.Close()
		return nil, err
	}
	if a.Master, err = a.StartRole("master", AROMasterNode, a.MasterProxy); err != nil {
		a.Close()
		return nil, err
	}
	if err := a.applySettings(ctx, spec); err != nil {
		a.Close()
		return nil, fmt.Errorf("aro-monitor did not create its MonitorConfig: %w\n%s", err, a.Master.Logs())
	}
	if a.Worker, err = a.StartRole("worker", AROWorkerNode, a.WorkerProxy); err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

// StartRole runs one role of aro-monitor with the flags and environment its
// chart's Deployment gives it (NODE_NAME from the downward API, the probes' proxy),
// as its ServiceAccount, pointed at the local ARM and AAD.
func (a *AROCluster) StartRole(role, node string, proxy *egresssim.Proxy) (*Running, error) {
	metricsAddr, probeAddr, err := freeAddrs()
	if err != nil {
		return nil, err
	}
	kubeconfig := a.masterKubeconfig
	if role == "worker" {
		kubeconfig = a.workerKubeconfig
	}
	leaseNS := a.Namespace
	if role == "worker" {
		leaseNS = a.WorkerLeaseNamespace
	}
	args := []string{"--role=" + role, "--kubeconfig=" + kubeconfig, "--leader-elect=true",
		"--leader-election-namespace=" + leaseNS,
		"--metrics-bind-address=" + metricsAddr, "--metrics-cert-dir=" + a.Chart.MetricsCert.Dir,
		"--health-probe-bind-address=" + probeAddr, "--log-format=json"}
	if role == "master" {
		args = append(args, "--credentials-secret="+AROCredentialsNamespace+"/"+AROCredentialsName,
			"--arm-endpoint="+a.ARM.URL(), "--aad-authority-host="+a.ARM.URL())
	}
	// The proxy as the chart gives it: flags for the prober alone. The
	// environment's proxy variables are cleared so nothing else picks one.
	args = append(args, "--probe-https-proxy="+proxy.URL, "--probe-http-proxy="+proxy.URL)
	env := []string{"NODE_NAME=" + node, "SSL_CERT_FILE=" + filepath.Join(a.dir, "ca-bundle.pem"),
		"HTTPS_PROXY=", "HTTP_PROXY=", "NO_PROXY=", "https_proxy=", "http_proxy=", "no_proxy="}
	c, err := StartComponentEnv(env, a.binary, args...)
	if err != nil {
		return nil, err
	}
	return &Running{Component: c, MetricsURL: "https://" + metricsAddr + "/metrics", ReadyzURL: "http://" + probeAddr + "/readyz"}, nil
}

// Close stops the local servers (not the processes: Stop them first).
func (a *AROCluster) Close() {
	if a.MasterProxy != nil {
		a.MasterProxy.Close()
	}
	if a.WorkerProxy != nil {
		a.WorkerProxy.Close()
	}
	if a.Targets != nil {
		a.Targets.Close()
	}
	if a.ARM != nil {
		a.ARM.Close()
	}
	if a.DNS != nil {
		_ = a.DNS.Close()
	}
}

// ProxyURL is p's URL, parsed.
func ProxyURL(p *egresssim.Proxy) *url.URL {
	u, _ := url.Parse(p.URL)
	return u
}

// AROClusterObject reads ARO's Cluster object from the repository's
// fixture, as ARO's resource provider writes it.
func AROClusterObject() (*unstructured.Unstructured, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(filepath.Join(root, "services", "aromonitor", "validation", "testdata", "aro-cluster.yaml"))
	if err != nil {
		return nil, err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return nil, errors.New("no Cluster named cluster in aro-cluster.yaml")
			}
			return nil, err
		}
		if u.GetKind() == "Cluster" && u.GetName() == "cluster" {
			return u, nil
		}
	}
}

func (a *AROCluster) seed(ctx context.Context, spec amv1alpha1.MonitorConfigSpec) error {
	c := a.Env.Client
	cluster, err := AROClusterObject()
	if err != nil {
		return err
	}
	provider := func(subnet string) *runtime.RawExtension {
		return &runtime.RawExtension{Raw: fmt.Appendf(nil, `{"apiVersion":"machine.openshift.io/v1beta1","kind":"AzureMachineProviderSpec","vnet":"prod-vnet","subnet":%q,"networkResourceGroup":"vnet-rg",`+
			`"image":{"publisher":"azureopenshift","offer":"aro4","sku":"aro_417","version":"417.94.20240701"},"osDisk":{"diskSizeGB":128,"osType":"Linux"}}`, subnet)}
	}
	objs := []client.Object{cluster,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: AROCredentialsName, Namespace: AROCredentialsNamespace},
			Data: map[string][]byte{"azure_tenant_id": []byte(AROTenant), "azure_client_id": []byte(AROClientID),
				"azure_client_secret": []byte(AROSecret), "azure_subscription_id": []byte(AROSubscription)}},
	}
	for i := range 3 {
		m := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("prod-1-master-%d", i), Namespace: AROMachineNamespace,
			Labels: map[string]string{"machine.openshift.io/cluster-api-machine-role": "master"}}}
		m.Spec.ProviderSpec.Value = provider("master-subnet")
		objs = append(objs, m)
	}
	ms := &machinev1beta1.MachineSet{ObjectMeta: metav1.ObjectMeta{Name: "prod-1-worker-eastus1", Namespace: AROMachineNamespace,
		Labels: map[string]string{"machine.openshift.io/cluster-api-machine-role": "worker"}}}
	ms.Spec.Replicas = ptr.To[int32](1)
	ms.Spec.Selector.MatchLabels = map[string]string{"machine.openshift.io/cluster-api-machineset": ms.Name}
	ms.Spec.Template.Labels = map[string]string{"machine.openshift.io/cluster-api-machineset": ms.Name}
	ms.Spec.Template.Spec.ProviderSpec.Value = provider("worker-subnet")
	wm := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Name: AROWorkerNode, Namespace: AROMachineNamespace,
		Labels: map[string]string{"machine.openshift.io/cluster-api-machine-role": "worker", "machine.openshift.io/cluster-api-machineset": ms.Name}}}
	wm.Spec.ProviderSpec.Value = provider("worker-subnet")
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: AROWorkerNode,
		Annotations: map[string]string{"machine.openshift.io/machine": AROMachineNamespace + "/" + AROWorkerNode}}}
	objs = append(objs, ms, wm, node)
	// The cluster configuration DefaultIngressCertificate and
	// DefaultClusterDNS read, as on a healthy ARO cluster.
	ingressNS := "openshift-ingress-operator"
	objs = append(objs,
		&configv1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Name: "version"}, Spec: configv1.ClusterVersionSpec{ClusterID: AROClusterID}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ingressNS}},
		&operatorv1.IngressController{ObjectMeta: metav1.ObjectMeta{Namespace: ingressNS, Name: "default"},
			Spec: operatorv1.IngressControllerSpec{DefaultCertificate: &corev1.LocalObjectReference{Name: AROClusterID + "-ingress"}}},
		&operatorv1.DNS{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: operatorv1.DNSSpec{Servers: []operatorv1.Server{{
			Name: "corp", Zones: []string{"corp.example.com"}, ForwardPlugin: operatorv1.ForwardPlugin{Upstreams: []string{ARODNSUpstream}}}}}},
	)
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			return fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	// Another writer's conditions, as ARO's operator keeps them beside the
	// types aro-monitor writes: they must survive every aro-monitor write.
	cluster.Object["status"] = map[string]any{"conditions": AROForeignConditions()}
	return c.Status().Update(ctx, cluster)
}

// AROForeignConditions are conditions ARO's operator writes on the Cluster
// that aro-monitor never owns, in the order ARO wrote them.
func AROForeignConditions() []any {
	return []any{
		map[string]any{"type": "PullSecretControllerAvailable", "status": "True", "reason": "AsExpected", "lastTransitionTime": "2026-01-02T03:04:05Z"},
		map[string]any{"type": "GuardRailsStatus", "status": "True", "reason": "CheckDone", "message": "guardrails in place", "lastTransitionTime": "2026-01-02T03:04:05Z"},
		map[string]any{"type": "CPMSControllerAvailable", "status": "True", "lastTransitionTime": "2026-01-02T03:04:05Z"},
	}
}

// applySettings waits for aro-monitor's master to create the MonitorConfig
// that keeps its record, then sets its spec, as an administrator would.
func (a *AROCluster) applySettings(ctx context.Context, spec amv1alpha1.MonitorConfigSpec) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		mc := &amv1alpha1.MonitorConfig{}
		if err := a.Env.Client.Get(ctx, client.ObjectKey{Name: amv1alpha1.SingletonName}, mc); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		mc.Spec = spec
		if err := a.Env.Client.Update(ctx, mc); err != nil {
			return false, ignoreConflict(err)
		}
		return true, nil
	})
}

func ignoreConflict(err error) error {
	if apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// selfSigned is a certificate for names, and its PEM.
func selfSigned(names []string) (tls.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: names[0]},
		// The names it stands in for, and loopback for callers without the
		// DNS (a plain measurement against the same server).
		DNSNames: names, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pemBytes, nil
}
