package cpmsoperator

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/cert"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// The payload's validating webhook for ControlPlaneMachineSets, as the
// manifest 0000_30_control-plane-machine-set-operator_05_webhook.yaml of
// openshift/cluster-control-plane-machine-set-operator installs it (same
// since 4.14).
const (
	// WebhookConfiguration names the ValidatingWebhookConfiguration.
	WebhookConfiguration = "controlplanemachineset.machine.openshift.io"
	// WebhookName names its one webhook (the apiserver's refusals quote it).
	WebhookName = "controlplanemachineset.machine.openshift.io"
	// WebhookPath is the path the operator serves it on.
	WebhookPath = "/validate-machine-openshift-io-v1-controlplanemachineset"
	// WebhookService is the Service the real webhook calls (namespace
	// Namespace, port 9443); the simulated one is called by URL instead.
	WebhookService = "control-plane-machine-set-operator"
)

// ValidatingWebhookConfiguration is the payload's webhook configuration
// with its clientConfig pointing at url (the real one names the Service
// WebhookService, port 9443, path WebhookPath, with the service CA
// injected): CREATE and UPDATE of machine.openshift.io/v1
// controlplanemachinesets — not their status subresource, nor DELETE —
// failurePolicy Fail, sideEffects None, admissionReviewVersions v1.
func ValidatingWebhookConfiguration(url string, caBundle []byte) *admissionregistrationv1.ValidatingWebhookConfiguration {
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: WebhookConfiguration},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    WebhookName,
			AdmissionReviewVersions: []string{"v1"},
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To(url), CABundle: caBundle},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule: admissionregistrationv1.Rule{
					APIGroups:   []string{"machine.openshift.io"},
					APIVersions: []string{"v1"},
					Resources:   []string{"controlplanemachinesets"},
				},
			}},
		}},
	}
}

// WebhookOptions configure the simulated webhook.
type WebhookOptions struct {
	Log logr.Logger
}

// SetupWebhook adds the payload's validating webhook for
// ControlPlaneMachineSets and its availability to mgr.
//
// When the manager starts, an HTTPS server on 127.0.0.1 (a free port, a
// self-signed serving certificate) is prepared and the
// ValidatingWebhookConfiguration WebhookConfiguration is created (or
// updated) with its URL and CA. The server answers only while the operator
// runs (Runs: its Deployment exists, is not being deleted and asks for a
// replica), and then admits every request: the real webhook validates the
// set's spec, which is not simulated. While the operator does not run the
// port is closed, with every connection the apiserver kept open, as a
// Service without endpoints would be: the apiserver cannot call the webhook
// and, the failure policy being Fail, refuses every create and update of a
// ControlPlaneMachineSet with "failed calling webhook
// "controlplanemachineset.machine.openshift.io": ... connect: connection
// refused" (on OpenShift the apiserver says "no endpoints available for
// service "control-plane-machine-set-operator"" instead). Status writes and
// deletions are not covered by the webhook and go through. When the
// operator runs again the server listens on the same port again.
//
// When the manager stops, the server is stopped and the configuration
// deleted (if it is still the one this simulator created), so a cluster
// whose simulator is stopped or restarted does not keep refusing.
func SetupWebhook(mgr ctrl.Manager, o WebhookOptions) error {
	w := &webhookServer{c: mgr.GetClient(), live: mgr.GetAPIReader(), log: o.Log}
	hook, err := admission.StandaloneWebhook(&admission.Webhook{
		Handler: admission.HandlerFunc(func(context.Context, admission.Request) admission.Response {
			return admission.Allowed("")
		}),
	}, admission.StandaloneOptions{Logger: o.Log.WithName("cpms-webhook")})
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle(WebhookPath, hook)
	w.handler = mux
	if err := mgr.Add(w); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).Named("control-plane-machine-set-webhook").
		For(&appsv1.Deployment{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetNamespace() == Deployment.Namespace && o.GetName() == Deployment.Name
		}))).
		Complete(reconcile.Func(func(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
			runs, err := operatorRuns(ctx, w.c)
			if err != nil {
				return reconcile.Result{}, err
			}
			return reconcile.Result{}, w.set(runs)
		}))
}

// operatorRuns reads the operator's Deployment through r.
func operatorRuns(ctx context.Context, r client.Reader) (bool, error) {
	var d appsv1.Deployment
	if err := r.Get(ctx, Deployment, &d); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, err
	}
	return Runs(&d), nil
}

// webhookServer is the simulated webhook's server: a manager runnable that
// owns the configuration, listening only while the operator runs.
type webhookServer struct {
	c       client.Client
	live    client.Reader
	log     logr.Logger
	handler http.Handler

	mu       sync.Mutex
	tls      *tls.Config // nil until started
	port     int
	srv      *http.Server // nil while not listening
	want     bool         // the operator runs, as last seen
	reported bool         // the Deployment controller has set want
	stopped  bool
}

// NeedLeaderElection: the webhook answers in every simulator.
func (w *webhookServer) NeedLeaderElection() bool { return false }

// Start prepares the server, listening if the operator runs, installs the
// configuration, and on ctx's end stops the server and removes the
// configuration.
func (w *webhookServer) Start(ctx context.Context) error {
	const host = "127.0.0.1"
	certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey(host, nil, nil)
	if err != nil {
		return fmt.Errorf("cpms webhook: serving certificate: %w", err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("cpms webhook: serving certificate: %w", err)
	}
	runs, err := operatorRuns(ctx, w.live)
	if err != nil {
		return fmt.Errorf("cpms webhook: %w", err)
	}
	// A free port, kept for the simulator's lifetime.
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return fmt.Errorf("cpms webhook: %w", err)
	}
	w.mu.Lock()
	w.tls = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
	w.port = ln.Addr().(*net.TCPAddr).Port
	// Once the Deployment controller has reported, it follows every change
	// of the Deployment after what it saw; until then the live read is
	// what there is.
	if !w.reported {
		w.want = runs
	}
	if w.want {
		w.serve(ln)
	} else {
		_ = ln.Close()
	}
	w.mu.Unlock()
	defer w.shutdown()

	url := "https://" + net.JoinHostPort(host, strconv.Itoa(w.port)) + WebhookPath
	uid, err := w.install(ctx, ValidatingWebhookConfiguration(url, certPEM))
	if err != nil {
		return fmt.Errorf("cpms webhook: installing %s: %w", WebhookConfiguration, err)
	}
	w.log.Info(logPrefix + fmt.Sprintf("webhook %s served at %s (while the operator runs)", WebhookName, url))
	<-ctx.Done()

	// The manager's context has ended: remove the configuration with one
	// of our own, unless someone replaced it meanwhile.
	rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = w.c.Delete(rctx, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: WebhookConfiguration}},
		client.Preconditions{UID: &uid})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("cpms webhook: removing %s: %w", WebhookConfiguration, err)
	}
	return nil
}

// install creates or updates the configuration and returns its UID.
func (w *webhookServer) install(ctx context.Context, want *admissionregistrationv1.ValidatingWebhookConfiguration) (types.UID, error) {
	err := w.c.Create(ctx, want)
	if err == nil {
		return want.UID, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	// Left by a simulator that could not remove it, or installed by
	// someone else: it is the payload's, make it ours.
	var have admissionregistrationv1.ValidatingWebhookConfiguration
	if err := w.live.Get(ctx, client.ObjectKey{Name: WebhookConfiguration}, &have); err != nil {
		return "", err
	}
	have.Webhooks = want.Webhooks
	if err := w.c.Update(ctx, &have); err != nil {
		return "", err
	}
	return have.UID, nil
}

// set makes the server listen (runs) or not; before Start it only records
// what the operator does.
func (w *webhookServer) set(runs bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.want, w.reported = runs, true
	if w.tls == nil || w.stopped || (w.srv != nil) == runs {
		return nil
	}
	if !runs {
		// Close the listener and every connection, idle ones included: the
		// apiserver's next call must find nothing listening.
		_ = w.srv.Close()
		w.srv = nil
		w.log.Info(logPrefix + "webhook " + WebhookName + " stopped answering (the operator does not run)")
		return nil
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(w.port)))
	if err != nil {
		return fmt.Errorf("cpms webhook: listening again on port %d: %w", w.port, err)
	}
	w.serve(ln)
	w.log.Info(logPrefix + "webhook " + WebhookName + " answers again (the operator runs)")
	return nil
}

// serve serves on ln (w.mu held).
func (w *webhookServer) serve(ln net.Listener) {
	srv := &http.Server{
		Handler:           w.handler,
		ReadHeaderTimeout: 10 * time.Second,
		// A call cut off by the server's Close is what the simulation means.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	w.srv = srv
	go func() {
		if err := srv.Serve(tls.NewListener(ln, w.tls)); err != nil && !errors.Is(err, http.ErrServerClosed) {
			w.log.Error(err, logPrefix+"webhook server")
		}
	}()
}

// shutdown stops the server for good.
func (w *webhookServer) shutdown() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	if w.srv != nil {
		_ = w.srv.Close()
		w.srv = nil
	}
}
