package runtime

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/tools/leaderelection"
)

// Flags are the command-line flags every Upshift binary accepts.
type Flags struct {
	Kubeconfig              string
	MetricsBindAddress      string
	MetricsSecure           bool
	MetricsCertDir          string
	HealthProbeBindAddress  string
	PprofBindAddress        string
	LeaderElect             bool
	LeaderElectionNamespace string
	LeaseDuration           time.Duration
	RenewDeadline           time.Duration
	RetryPeriod             time.Duration
	LogLevel                string
	LogFormat               string
	GracefulShutdownTimeout time.Duration
	KubeAPIQPS              float64
	KubeAPIBurst            int
	Version                 bool
}

// LogFormats are the accepted values of --log-format.
var LogFormats = []string{"json", "console"}

// RegisterFlags adds the common flags to fs with their defaults and returns
// the struct they fill. Components may add their own flags to fs before
// parsing.
func RegisterFlags(fs *flag.FlagSet) *Flags {
	f := &Flags{}
	fs.StringVar(&f.Kubeconfig, "kubeconfig", "",
		"Path to a kubeconfig. Empty: $KUBECONFIG, the in-cluster config, then ~/.kube/config.")
	fs.StringVar(&f.MetricsBindAddress, "metrics-bind-address", ":8080",
		`Address the /metrics endpoint binds to; "0" disables it.`)
	fs.BoolVar(&f.MetricsSecure, "metrics-secure", true,
		"Serve /metrics over HTTPS, only to callers whose bearer token the kube-apiserver authenticates (TokenReview) "+
			"and authorizes for get on the /metrics URL (SubjectAccessReview). false: plain HTTP, no authentication.")
	fs.StringVar(&f.MetricsCertDir, "metrics-cert-dir", "",
		"Folder with tls.crt and tls.key for the metrics endpoint, reloaded when they change. Empty: a self-signed certificate made at start.")
	fs.StringVar(&f.HealthProbeBindAddress, "health-probe-bind-address", ":8081",
		`Address the /healthz and /readyz endpoints bind to; "0" disables them.`)
	// Off by default: the profiles show the heap and goroutines to whoever
	// reaches the port, with no authentication.
	fs.StringVar(&f.PprofBindAddress, "pprof-bind-address", "0",
		`Address Go's /debug/pprof endpoints bind to, unauthenticated: bind it to localhost and use it for diagnosis only; "0" disables them.`)
	fs.BoolVar(&f.LeaderElect, "leader-elect", true,
		"Elect a leader through a Lease so that only one replica acts at a time.")
	fs.StringVar(&f.LeaderElectionNamespace, "leader-election-namespace", "",
		"Namespace of the leader-election Lease. Empty: the pod's own namespace (required outside a cluster).")
	// The names and defaults of kube-controller-manager's (and
	// controller-runtime's) leader election.
	fs.DurationVar(&f.LeaseDuration, "leader-elect-lease-duration", 15*time.Second,
		"How long a Lease holds after its holder's last renewal: the longest a new leader waits to take over from one that died without releasing it.")
	fs.DurationVar(&f.RenewDeadline, "leader-elect-renew-deadline", 10*time.Second,
		"How long the leader keeps trying to renew its Lease before it gives up leadership and exits; shorter than --leader-elect-lease-duration.")
	fs.DurationVar(&f.RetryPeriod, "leader-elect-retry-period", 2*time.Second,
		"How often replicas try to acquire the Lease, and the leader to renew it.")
	fs.StringVar(&f.LogLevel, "log-level", "info",
		"Log level: debug, info, warn, error, or a verbosity number 0-10 (higher logs more).")
	fs.StringVar(&f.LogFormat, "log-format", "json", "Log format: json or console.")
	fs.DurationVar(&f.GracefulShutdownTimeout, "graceful-shutdown-timeout", 10*time.Second,
		"How long running reconciles may take to finish after SIGTERM.")
	fs.Float64Var(&f.KubeAPIQPS, "kube-api-qps", 50,
		"Client-side limit of requests per second to the kube-apiserver.")
	fs.IntVar(&f.KubeAPIBurst, "kube-api-burst", 100,
		"Client-side burst of requests to the kube-apiserver above --kube-api-qps.")
	fs.BoolVar(&f.Version, "version", false, "Print the version and exit.")
	return f
}

// ParseFlags parses args into a new FlagSet named after the component and
// validates the values. Errors are one line and name the offending flag.
// Usage text is written to out only when -h/--help is asked for.
func ParseFlags(component string, args []string, out io.Writer, extra func(*flag.FlagSet)) (*Flags, error) {
	fs := flag.NewFlagSet(component, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := RegisterFlags(fs)
	if extra != nil {
		extra(fs)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(out)
			fmt.Fprintf(out, "Usage of %s:\n", component)
			fs.PrintDefaults()
		}
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q: %s takes flags only", fs.Arg(0), component)
	}
	return f, f.Validate()
}

// Validate checks every value that the flag package cannot check by type.
func (f *Flags) Validate() error {
	if _, err := parseLevel(f.LogLevel); err != nil {
		return fmt.Errorf("invalid value %q for flag --log-level: %w", f.LogLevel, err)
	}
	if !contains(LogFormats, f.LogFormat) {
		return fmt.Errorf("invalid value %q for flag --log-format: must be one of %s",
			f.LogFormat, strings.Join(LogFormats, ", "))
	}
	for name, addr := range map[string]string{
		"metrics-bind-address":      f.MetricsBindAddress,
		"health-probe-bind-address": f.HealthProbeBindAddress,
		"pprof-bind-address":        f.PprofBindAddress,
	} {
		if err := validateBindAddress(addr); err != nil {
			return fmt.Errorf("invalid value %q for flag --%s: %w", addr, name, err)
		}
	}
	// client-go's leader election refuses these at start; here they are
	// usage errors that name the flag.
	switch {
	case f.RetryPeriod <= 0:
		return fmt.Errorf("invalid value %s for flag --leader-elect-retry-period: must be positive", f.RetryPeriod)
	case float64(f.RenewDeadline) <= leaderelection.JitterFactor*float64(f.RetryPeriod):
		return fmt.Errorf("invalid value %s for flag --leader-elect-renew-deadline: must be more than %.1f × --leader-elect-retry-period (%s)",
			f.RenewDeadline, leaderelection.JitterFactor, f.RetryPeriod)
	case f.LeaseDuration <= f.RenewDeadline:
		return fmt.Errorf("invalid value %s for flag --leader-elect-lease-duration: must be more than --leader-elect-renew-deadline (%s)",
			f.LeaseDuration, f.RenewDeadline)
	}
	if f.MetricsCertDir != "" && !f.MetricsSecure {
		return fmt.Errorf("invalid value %q for flag --metrics-cert-dir: needs --metrics-secure=true", f.MetricsCertDir)
	}
	if f.KubeAPIQPS <= 0 {
		return fmt.Errorf("invalid value %v for flag --kube-api-qps: must be positive", f.KubeAPIQPS)
	}
	if f.KubeAPIBurst < 1 {
		return fmt.Errorf("invalid value %d for flag --kube-api-burst: must be at least 1", f.KubeAPIBurst)
	}
	if f.GracefulShutdownTimeout < 0 {
		return fmt.Errorf("invalid value %s for flag --graceful-shutdown-timeout: must not be negative",
			f.GracefulShutdownTimeout)
	}
	return nil
}

func validateBindAddress(addr string) error {
	if addr == "0" {
		return nil
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return errors.New(`want host:port, :port or "0"`)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return errors.New("port must be a number from 0 to 65535")
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
