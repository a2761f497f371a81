package azuresim

import (
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// Server is the local ARM and AAD. Create it with Start; Close stops it.
type Server struct {
	srv *httptest.Server

	mu      sync.Mutex
	now     func() time.Time
	subnets map[string]*subnetState // by lower-cased resource ID
	nsgs    map[string]string       // lower-cased ID → ID as created
	apps    map[string]*App         // by client ID
	tokens  map[string]issued       // access tokens handed out
	ops     map[string]*operation   // long-running operations by ID
	faults  map[string][]Fault      // by route key, consumed in order
	actors  map[string]time.Duration
	log     []Request
	opSeq   int
	// PollsPerOperation is how many status polls a PUT stays InProgress.
	pollsPerOp int
}

// Request is one access-log entry.
type Request struct {
	Time       time.Time
	Method     string
	Path       string // lower-cased, without the query
	APIVersion string
	Status     int
}

// Fault is a scripted failure for one call.
type Fault struct {
	Status int
	// Code is ARM's error code, e.g. TooManyRequests, AuthorizationFailed.
	Code string
	// RetryAfter, when set, is sent as a Retry-After header in seconds.
	RetryAfter time.Duration
	// Delay holds the response back this long (a slow ARM).
	Delay time.Duration
}

// Start starts the server on a free loopback port.
func Start() *Server {
	s := &Server{
		now: time.Now, subnets: map[string]*subnetState{}, nsgs: map[string]string{},
		apps: map[string]*App{}, tokens: map[string]issued{}, ops: map[string]*operation{},
		faults: map[string][]Fault{}, actors: map[string]time.Duration{}, pollsPerOp: 1,
	}
	s.srv = httptest.NewTLSServer(s.logged(http.HandlerFunc(s.route)))
	return s
}

// route dispatches by path. AAD's paths start with the tenant, which a
// ServeMux pattern cannot tell apart from ARM's /subscriptions/.
func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	first, rest, _ := strings.Cut(strings.TrimPrefix(p, "/"), "/")
	switch {
	case first == "subscriptions":
		s.armOnly(s.resource)(w, r)
	case first == "operations" && r.Method == http.MethodGet:
		s.armOnly(func(w http.ResponseWriter, r *http.Request) { s.operationStatus(w, rest) })(w, r)
	case rest == "v2.0/.well-known/openid-configuration" && r.Method == http.MethodGet:
		s.openIDConfiguration(w, first)
	case rest == "oauth2/v2.0/token" && r.Method == http.MethodPost:
		s.token(w, r, first)
	default:
		http.NotFound(w, r)
	}
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// URL is the server's base URL, for ARM and AAD alike.
func (s *Server) URL() string { return s.srv.URL }

// Certificate is the server's TLS certificate, for a process that must
// trust it (written into its SSL_CERT_FILE).
func (s *Server) Certificate() *x509.Certificate { return s.srv.Certificate() }

// CertPool trusts the server's certificate.
func (s *Server) CertPool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(s.srv.Certificate())
	return p
}

// Client is an HTTP client that trusts the server; pass it as the SDK's
// transport.
func (s *Server) Client() *http.Client { return s.srv.Client() }

// Cloud is the cloud configuration pointing the SDK here for both AAD and ARM.
func (s *Server) Cloud() cloud.Configuration {
	return cloud.Configuration{
		ActiveDirectoryAuthorityHost: s.srv.URL + "/",
		Services: map[cloud.ServiceName]cloud.ServiceConfiguration{
			cloud.ResourceManager: {Endpoint: s.srv.URL, Audience: ARMAudience},
		},
	}
}

// ARMClientOptions are client options for the arm* clients: this cloud, this
// server's TLS trust, and retry delays short enough for tests.
func (s *Server) ARMClientOptions() *arm.ClientOptions {
	return &arm.ClientOptions{ClientOptions: policy.ClientOptions{
		Cloud: s.Cloud(), Transport: s.Client(),
		Retry: policy.RetryOptions{MaxRetries: 3, RetryDelay: 50 * time.Millisecond, MaxRetryDelay: 30 * time.Second},
	}}
}

// Log returns the access log so far.
func (s *Server) Log() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.log...)
}

// FailNext scripts the next calls of method on the resource ID (or "*" for
// every resource) to fail, one fault per call, in order.
func (s *Server) FailNext(method, resourceID string, faults ...Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := routeKey(method, resourceID)
	s.faults[k] = append(s.faults[k], faults...)
}

func routeKey(method, id string) string { return method + " " + strings.ToLower(id) }

// nextFault pops the fault for a call, if one is scripted.
func (s *Server) nextFault(method, id string) (Fault, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range []string{routeKey(method, id), routeKey(method, "*")} {
		if q := s.faults[k]; len(q) > 0 {
			s.faults[k] = q[1:]
			return q[0], true
		}
	}
	return Fault{}, false
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (s *Server) logged(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		start := s.now()
		next.ServeHTTP(rec, r)
		s.mu.Lock()
		s.log = append(s.log, Request{Time: start, Method: r.Method, Path: strings.ToLower(r.URL.Path),
			APIVersion: r.URL.Query().Get("api-version"), Status: rec.status})
		s.mu.Unlock()
	})
}

// armError writes ARM's error shape.
func armError(w http.ResponseWriter, status int, code, message string, retryAfter time.Duration) {
	if retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(retryAfter.Round(time.Second)/time.Second)))
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("x-ms-error-code", code)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": code, "message": message}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// armOnly checks the bearer token was issued here for ARM's audience.
func (s *Server) armOnly(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		s.mu.Lock()
		iss, ok := s.tokens[tok]
		s.mu.Unlock()
		switch {
		case !ok:
			armError(w, http.StatusUnauthorized, "InvalidAuthenticationToken", "The access token is invalid.", 0)
		case iss.audience != ARMAudience:
			armError(w, http.StatusUnauthorized, "InvalidAuthenticationTokenAudience", fmt.Sprintf("The access token has been obtained for wrong audience or resource '%s'.", iss.audience), 0)
		case s.now().After(iss.expires):
			armError(w, http.StatusUnauthorized, "ExpiredAuthenticationToken", "The access token expiry UTC time is earlier than current UTC time.", 0)
		default:
			h(w, r)
		}
	}
}
