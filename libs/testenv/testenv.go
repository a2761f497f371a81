// Package testenv runs a real Kubernetes control plane for tests: etcd and
// kube-apiserver (through controller-runtime's envtest), and on request
// kube-controller-manager, kube-scheduler, kwok and Alertmanager, with the
// OpenShift and Upshift CRDs installed. All binaries are built from Go
// modules by `make testbin`; see TESTSTACK.md.
//
//	env, err := testenv.Start(ctx, testenv.Options{ControllerManager: true, Kwok: true})
//	if err != nil { ... }
//	defer env.Stop()
//
// No process outlives the test process, even when a test panics: a watchdog
// kills the control plane when the test process goes away.
package testenv

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/upshift-io/upshift/libs/scheme"
)

// KwokNodeAnnotation marks the Nodes kwok manages: a Node annotated
// KwokNodeAnnotation=KwokNodeValue becomes Ready, and pods bound to it run.
const (
	KwokNodeAnnotation = "kwok.x-k8s.io/node"
	KwokNodeValue      = "fake"
)

// DefaultControllers are the kube-controller-manager controllers Start runs:
// what our tests rely on (Jobs, PodDisruptionBudgets, garbage collection,
// Deployments), nodelifecycle (it lifts the not-ready taint the apiserver puts
// on every new Node, and taints Nodes that go NotReady, as in a real cluster),
// serviceaccount and namespace.
var DefaultControllers = []string{
	"job", "garbagecollector", "disruption", "replicaset", "deployment",
	"nodelifecycle", "serviceaccount", "namespace",
}

// Options choose which parts of the stack to start. etcd and kube-apiserver
// always run.
type Options struct {
	// ControllerManager starts kube-controller-manager with Controllers.
	ControllerManager bool
	// Controllers overrides DefaultControllers.
	Controllers []string
	// Scheduler starts kube-scheduler, for pods created without a nodeName
	// (Deployments, Jobs without a node).
	Scheduler bool
	// Kwok starts kwok, managing the Nodes annotated KwokNodeAnnotation.
	Kwok bool
	// KwokNodeLeases has kwok heartbeat as an OpenShift kubelet does: it
	// renews each node's Lease every 10 s and patches the Node's status
	// only when it changes (and every 10 minutes). Without it kwok patches
	// every Node's status every 20-25 s (its default without Leases), which
	// every Node watcher is sent: at 500 nodes most of the apiserver's work,
	// a load no real cluster has. The benchmarks set it; the e2e suites do
	// not yet (docs/testing.md says why).
	KwokNodeLeases bool
	// Alertmanager starts an Alertmanager with a null receiver; its base
	// URL is Env.Alertmanager.URL. StartAlertmanager runs one without a
	// control plane.
	Alertmanager bool
	// ExtraCRDDirs are folders of further CRD manifests to install.
	ExtraCRDDirs []string
	// WithoutUpshiftCRDs installs only the OpenShift CRDs, for testing how a
	// component or the CLI reports a missing CRD.
	WithoutUpshiftCRDs bool
	// AuditLog makes kube-apiserver log every request (metadata only) to
	// Env.AuditLogPath; see Env.AuditEvents.
	AuditLog bool
	// KeepDir keeps the folder with the logs and kubeconfigs after Stop.
	KeepDir bool
	// ValidatingWebhooks are installed in the apiserver once it runs, each
	// webhook's clientConfig rewritten to reach a webhook server the test
	// runs on this machine (a service reference becomes a URL with the
	// service's path); Env.Webhook says where to serve and with which
	// certificate. Mind failurePolicy Fail: until that server runs, the
	// requests the webhooks match are refused.
	ValidatingWebhooks []*admissionregistrationv1.ValidatingWebhookConfiguration
}

// WebhookServing is where the apiserver expects the test's webhook server
// (Options.ValidatingWebhooks): host and port to listen on, and a folder with
// the serving certificate and key (tls.crt, tls.key) the apiserver trusts.
type WebhookServing struct {
	Host    string
	Port    int
	CertDir string
}

// Env is a running control plane.
type Env struct {
	// Config and Client are cluster-admin.
	Config *rest.Config
	Client client.Client
	// KubeconfigPath is an admin kubeconfig for child processes.
	KubeconfigPath string
	// Dir holds the logs and kubeconfigs.
	Dir string
	// AuditLogPath is the apiserver's audit log, with Options.AuditLog.
	AuditLogPath string
	// Webhook is where to serve Options.ValidatingWebhooks (zero without).
	Webhook WebhookServing
	// Alertmanager runs with Options.Alertmanager; Stop stops it.
	Alertmanager *Alertmanager

	opts     Options
	envtest  *envtest.Environment
	children []*child
	// logs are the control plane's output files (logControlPlane).
	logs     []*os.File
	watchdog *watchdog
	stopOnce sync.Once
	stopErr  error
}

// Start starts the control plane. On error nothing is left running.
func Start(ctx context.Context, opts Options) (_ *Env, retErr error) {
	binDir, err := TestBinDir()
	if err != nil {
		return nil, err
	}
	if err := requireFiles(binDir, requiredFiles(opts)...); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "upshift-testenv-")
	if err != nil {
		return nil, err
	}
	crdList, err := loadCRDs(!opts.WithoutUpshiftCRDs, opts.ExtraCRDDirs)
	if err != nil {
		return nil, err
	}
	e := &Env{Dir: dir, opts: opts}
	e.envtest = &envtest.Environment{
		BinaryAssetsDirectory:    binDir,
		CRDs:                     crdList,
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: 60 * time.Second,
		ControlPlaneStopTimeout:  60 * time.Second,
		Scheme:                   scheme.Scheme,
	}
	if len(opts.ValidatingWebhooks) > 0 {
		hooks := make([]*admissionregistrationv1.ValidatingWebhookConfiguration, len(opts.ValidatingWebhooks))
		for i, h := range opts.ValidatingWebhooks {
			hooks[i] = h.DeepCopy() // envtest rewrites them; the caller's stay as given
		}
		e.envtest.WebhookInstallOptions = envtest.WebhookInstallOptions{ValidatingWebhooks: hooks, LocalServingHost: "127.0.0.1"}
	}
	defer func() {
		if retErr != nil {
			_ = e.Stop()
		}
	}()
	if err := e.keepAPIServerCerts(); err != nil {
		return nil, err
	}
	if err := e.publishServiceAccountKeys(); err != nil {
		return nil, err
	}
	if opts.AuditLog {
		if err := e.configureAudit(); err != nil {
			return nil, err
		}
	}
	if err := e.logControlPlane(); err != nil {
		return nil, err
	}
	if _, err := e.envtest.Start(); err != nil {
		return nil, fmt.Errorf("starting etcd and kube-apiserver: %w%s", err, e.controlPlaneTail())
	}
	if err := e.armWatchdog(); err != nil {
		return nil, err
	}
	if w := e.envtest.WebhookInstallOptions; len(w.ValidatingWebhooks) > 0 {
		e.Webhook = WebhookServing{Host: w.LocalServingHost, Port: w.LocalServingPort, CertDir: w.LocalServingCertDir}
	}
	admin, err := e.envtest.ControlPlane.AddUser(envtest.User{Name: "upshift-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, fmt.Errorf("creating admin user: %w", err)
	}
	e.Config = admin.Config()
	// Tests seed thousands of objects as admin; client-go's default of 5
	// requests per second would make seeding, not the code under test, the
	// slow part.
	e.Config.QPS, e.Config.Burst = 1000, 2000
	kubeconfig, err := admin.KubeConfig()
	if err != nil {
		return nil, err
	}
	e.KubeconfigPath = filepath.Join(dir, "admin.kubeconfig")
	if err := os.WriteFile(e.KubeconfigPath, kubeconfig, 0o600); err != nil {
		return nil, err
	}
	if e.Client, err = client.New(e.Config, client.Options{Scheme: scheme.Scheme}); err != nil {
		return nil, err
	}

	if opts.ControllerManager {
		if err := e.startControllerManager(ctx, binDir); err != nil {
			return nil, err
		}
	}
	if opts.Scheduler {
		if err := e.startScheduler(ctx, binDir); err != nil {
			return nil, err
		}
	}
	if opts.Kwok {
		if err := e.startKwok(ctx, binDir, opts); err != nil {
			return nil, err
		}
	}
	if opts.Alertmanager {
		// In Dir, so its log is kept with the others; Stop stops it as a child.
		am, err := StartAlertmanager(ctx, dir)
		if err != nil {
			return nil, err
		}
		e.children = append(e.children, am.child)
		e.Alertmanager = am
	}
	return e, e.armWatchdog()
}

func requiredFiles(opts Options) []string {
	files := []string{binEtcd, binAPIServer}
	if opts.ControllerManager {
		files = append(files, binControllerManager)
	}
	if opts.Scheduler {
		files = append(files, binScheduler)
	}
	if opts.Kwok {
		files = append(files, binKwok, kwokStages(opts))
	}
	if opts.Alertmanager {
		files = append(files, AlertmanagerBinary)
	}
	return files
}

// armWatchdog (re)starts the watchdog over every process started so far.
func (e *Env) armWatchdog() error {
	pids, err := childPIDs(binEtcd, binAPIServer)
	if err != nil {
		return err
	}
	for _, c := range e.children {
		pids = append(pids, c.cmd.Process.Pid)
	}
	w, err := startWatchdog(pids)
	if err != nil {
		return err
	}
	if e.watchdog != nil {
		e.watchdog.disarm()
	}
	e.watchdog = w
	return nil
}

func (e *Env) startControllerManager(ctx context.Context, binDir string) error {
	controllers := e.opts.Controllers
	if len(controllers) == 0 {
		controllers = DefaultControllers
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	c, err := startChild(e.Dir, binControllerManager, filepath.Join(binDir, binControllerManager),
		"--kubeconfig="+e.KubeconfigPath,
		"--authentication-kubeconfig="+e.KubeconfigPath,
		"--authorization-kubeconfig="+e.KubeconfigPath,
		"--authentication-skip-lookup",
		"--controllers="+strings.Join(controllers, ","),
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", port),
		"--cert-dir="+filepath.Join(e.Dir, "kcm-certs"),
		"--use-service-account-credentials=false",
		// OpenShift's kube-controller-manager operator runs it with these
		// client limits, not the upstream default of 20/30: at the default,
		// a hundred hook Jobs in flight queue behind the Job controller's
		// own writes, a pace no OpenShift cluster has.
		"--kube-api-qps=150",
		"--kube-api-burst=300",
	)
	if err != nil {
		return err
	}
	e.children = append(e.children, c)
	return waitHealthy(ctx, c, fmt.Sprintf("https://127.0.0.1:%d/healthz", port))
}

func (e *Env) startScheduler(ctx context.Context, binDir string) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	c, err := startChild(e.Dir, binScheduler, filepath.Join(binDir, binScheduler),
		"--kubeconfig="+e.KubeconfigPath,
		"--authentication-kubeconfig="+e.KubeconfigPath,
		"--authorization-kubeconfig="+e.KubeconfigPath,
		// envtest's apiserver publishes no request-header CA; without this
		// the scheduler waits for one forever and never schedules.
		"--authentication-skip-lookup",
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", port),
		"--cert-dir="+filepath.Join(e.Dir, "scheduler-certs"),
	)
	if err != nil {
		return err
	}
	e.children = append(e.children, c)
	return waitHealthy(ctx, c, fmt.Sprintf("https://127.0.0.1:%d/healthz", port))
}

// kwokStages is the stages file kwok runs with: the node heartbeat with or
// without Leases (see Options.KwokNodeLeases).
func kwokStages(opts Options) string {
	if opts.KwokNodeLeases {
		return fileKwokLeaseStages
	}
	return fileKwokStages
}

func (e *Env) startKwok(ctx context.Context, binDir string, opts Options) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	args := []string{
		"--kubeconfig=" + e.KubeconfigPath,
		"--config=" + filepath.Join(binDir, kwokStages(opts)),
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + KwokNodeAnnotation + "=" + KwokNodeValue,
		fmt.Sprintf("--server-address=127.0.0.1:%d", port),
	}
	if opts.KwokNodeLeases {
		// A kubelet's Lease, renewed every quarter of it (10 s), as an
		// OpenShift kubelet does: kube-controller-manager's node lifecycle
		// reads it, and the Node's status changes only when something does
		// (and every 10 min), not on every heartbeat. See the stages file.
		args = append(args, "--node-lease-duration-seconds=40")
	}
	c, err := startChild(e.Dir, binKwok, filepath.Join(binDir, binKwok), args...)
	if err != nil {
		return err
	}
	e.children = append(e.children, c)
	return waitHealthy(ctx, c, fmt.Sprintf("http://127.0.0.1:%d/healthz", port))
}

// waitHealthy waits for a helper's /healthz to answer 200, failing early with
// the helper's log if it exits.
func waitHealthy(ctx context.Context, c *child, url string) error {
	httpc := &http.Client{
		Timeout: 2 * time.Second,
		// The helpers serve a self-signed certificate; this is loopback only.
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec
	}
	return waitFor(ctx, 90*time.Second, c.name+" to become healthy", func() (bool, error) {
		if err := c.exited(); err != nil {
			return false, err
		}
		resp, err := httpc.Get(url)
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, fmt.Errorf("%s /healthz answered %s", c.name, resp.Status)
	})
}

// FreeAddr returns a loopback address with a port free at the time of the
// call, for a process under test to listen on.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// publishServiceAccountKeys makes the service-account issuer's OIDC
// discovery document name a keys URL the test process can reach: by default
// the apiserver names its advertise address, a documentation-only IP. A
// workload identity's token exchange (tools/azuresim) then finds the signing
// keys through discovery, as Entra ID does. The secure port is chosen here,
// since the URL must carry it.
func (e *Env) publishServiceAccountKeys() error {
	port, err := freePort()
	if err != nil {
		return err
	}
	api := e.envtest.ControlPlane.GetAPIServer()
	api.SecureServing.Address, api.SecureServing.Port = "127.0.0.1", strconv.Itoa(port)
	api.Configure().Set("service-account-jwks-uri", fmt.Sprintf("https://127.0.0.1:%d/openid/v1/jwks", port))
	return nil
}

func freePort() (int, error) {
	addr, err := FreeAddr()
	if err != nil {
		return 0, err
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(port)
}

// Stop stops every process in reverse start order and removes Dir unless
// KeepDir was set. It is safe to call more than once.
func (e *Env) Stop() error {
	e.stopOnce.Do(func() {
		for i := len(e.children) - 1; i >= 0; i-- {
			e.children[i].stop(5 * time.Second)
		}
		if e.envtest != nil {
			e.stopErr = e.envtest.Stop()
		}
		if e.watchdog != nil {
			e.watchdog.disarm()
		}
		for _, f := range e.logs {
			_ = f.Close()
		}
		if !e.opts.KeepDir && e.stopErr == nil {
			_ = os.RemoveAll(e.Dir)
		}
	})
	return e.stopErr
}

// Clientset returns a typed client-go clientset as cluster-admin, for the
// subresources controller-runtime's client does not cover.
func (e *Env) Clientset() (*kubernetes.Clientset, error) {
	return kubernetes.NewForConfig(e.Config)
}

// CreateNamespace creates a namespace unless it exists.
func (e *Env) CreateNamespace(ctx context.Context, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	return client.IgnoreAlreadyExists(e.Client.Create(ctx, ns))
}
