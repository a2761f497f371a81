package azure

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
	"golang.org/x/time/rate"
)

// Clouds maps ARO's spec.azEnvironment names to the SDK's configurations.
var Clouds = map[string]cloud.Configuration{
	"AzurePublicCloud":       cloud.AzurePublic,
	"AzureUSGovernmentCloud": cloud.AzureGovernment,
	"AzureChinaCloud":        cloud.AzureChina,
}

// Options configure the Factory.
type Options struct {
	// Cloud overrides the cloud chosen from spec.azEnvironment (a private
	// endpoint, or a local ARM in tests).
	Cloud *cloud.Configuration
	// Transport overrides the HTTP client (custom CA trust).
	Transport policy.Transporter
	// RequestsPerMinute is the ARM budget per subscription.
	RequestsPerMinute int
	// GraphScope overrides the Microsoft Graph scope chosen from the cloud.
	GraphScope string
	// Observe is called once per ARM response (or transport failure, code
	// "error"), with the operation name from the SDK's tracing.
	Observe func(operation, code string)
}

// Factory hands out credentials and clients, rebuilding the credential when
// the identity's Version changes.
type Factory struct {
	opts Options

	mu       sync.Mutex
	version  string
	cred     azcore.TokenCredential
	limiters map[string]*rate.Limiter
}

// NewFactory returns a Factory.
func NewFactory(o Options) *Factory {
	if o.RequestsPerMinute <= 0 {
		o.RequestsPerMinute = 30
	}
	return &Factory{opts: o, limiters: map[string]*rate.Limiter{}}
}

// CloudFor is the cloud configuration for an ARO azEnvironment.
func (f *Factory) CloudFor(azEnvironment string) (cloud.Configuration, error) {
	if f.opts.Cloud != nil {
		return *f.opts.Cloud, nil
	}
	if azEnvironment == "" {
		return cloud.AzurePublic, nil
	}
	c, ok := Clouds[azEnvironment]
	if !ok {
		return cloud.Configuration{}, fmt.Errorf("spec.azEnvironment %q is not a known Azure cloud", azEnvironment)
	}
	return c, nil
}

func (f *Factory) clientOptions(c cloud.Configuration) policy.ClientOptions {
	o := policy.ClientOptions{Cloud: c}
	if f.opts.Transport != nil {
		o.Transport = f.opts.Transport
	}
	return o
}

// graphScopes are Microsoft Graph's token scopes per cloud.
var graphScopes = map[string]string{
	"AzurePublicCloud":       "https://graph.microsoft.com/.default",
	"AzureUSGovernmentCloud": "https://graph.microsoft.us/.default",
	"AzureChinaCloud":        "https://microsoftgraph.chinacloudapi.cn/.default",
}

// Scopes returns the ARM and Microsoft Graph token scopes for a cloud.
func (f *Factory) Scopes(azEnvironment string, c cloud.Configuration) (arm, graph string) {
	// As the arm clients build it, double slash included.
	arm = c.Services[cloud.ResourceManager].Audience + "/.default"
	graph = f.opts.GraphScope
	if graph == "" {
		graph = graphScopes[azEnvironment]
	}
	if graph == "" {
		graph = graphScopes["AzurePublicCloud"]
	}
	return arm, graph
}

// Credential returns the credential for id, built anew when id.Version
// differs from the last one (a rotated Secret).
func (f *Factory) Credential(id Identity, c cloud.Configuration) (azcore.TokenCredential, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cred != nil && f.version == id.Version {
		return f.cred, nil
	}
	var (
		cred azcore.TokenCredential
		err  error
	)
	if id.FederatedTokenFile != "" {
		cred, err = azidentity.NewWorkloadIdentityCredential(&azidentity.WorkloadIdentityCredentialOptions{
			ClientOptions: f.clientOptions(c), TenantID: id.TenantID, ClientID: id.ClientID,
			TokenFilePath: id.FederatedTokenFile, DisableInstanceDiscovery: f.opts.Cloud != nil,
		})
	} else {
		cred, err = azidentity.NewClientSecretCredential(id.TenantID, id.ClientID, id.ClientSecret, &azidentity.ClientSecretCredentialOptions{
			ClientOptions: f.clientOptions(c), DisableInstanceDiscovery: f.opts.Cloud != nil,
		})
	}
	if err != nil {
		return nil, err
	}
	f.cred, f.version = cred, id.Version
	return cred, nil
}

// Subnets returns a subnets client for the subscription, its calls counted
// against the subscription's budget.
func (f *Factory) Subnets(subscription string, cred azcore.TokenCredential, c cloud.Configuration) (*armnetwork.SubnetsClient, error) {
	return armnetwork.NewSubnetsClient(subscription, cred, &arm.ClientOptions{ClientOptions: f.armOptions(subscription, c)})
}

// SetRequestsPerMinute changes the ARM budget of every subscription, from
// now on: the MonitorConfig's spec.arm.requestsPerMinute, read each pass.
func (f *Factory) SetRequestsPerMinute(n int) {
	if n <= 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if n == f.opts.RequestsPerMinute {
		return
	}
	f.opts.RequestsPerMinute = n
	for _, lim := range f.limiters {
		lim.SetLimit(rate.Limit(float64(n) / 60))
		lim.SetBurst(burst(n))
	}
}

// burst lets a pass over a few subnets go at once: a tenth of a minute's
// budget.
func burst(perMinute int) int { return max(1, perMinute/6) }

func (f *Factory) armOptions(subscription string, c cloud.Configuration) policy.ClientOptions {
	o := f.clientOptions(c)
	f.mu.Lock()
	lim, ok := f.limiters[strings.ToLower(subscription)]
	if !ok {
		per := float64(f.opts.RequestsPerMinute) / 60
		lim = rate.NewLimiter(rate.Limit(per), burst(f.opts.RequestsPerMinute))
		f.limiters[strings.ToLower(subscription)] = lim
	}
	f.mu.Unlock()
	// Per retry, so a retried request spends budget too; the SDK's retry
	// policy already honours Retry-After.
	o.PerRetryPolicies = append(o.PerRetryPolicies, budget{lim}, observe{f.opts.Observe})
	return o
}

// budget waits for the subscription's limiter before each request.
type budget struct{ lim *rate.Limiter }

func (b budget) Do(req *policy.Request) (*http.Response, error) {
	if err := b.lim.Wait(req.Raw().Context()); err != nil {
		return nil, fmt.Errorf("waiting for the ARM request budget: %w", err)
	}
	return req.Next()
}

// observe reports each response's status code.
type observe struct{ f func(operation, code string) }

func (o observe) Do(req *policy.Request) (*http.Response, error) {
	resp, err := req.Next()
	if o.f != nil {
		code := "error"
		if resp != nil {
			code = strconv.Itoa(resp.StatusCode)
		}
		o.f(operation(req.Raw()), code)
	}
	return resp, err
}

// operation names an ARM call by method and resource type, a bounded label:
// "GET subnets", "PUT subnets", "GET operations".
func operation(r *http.Request) string {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	kind := parts[0]
	if len(parts) >= 2 {
		kind = parts[len(parts)-2]
	}
	if strings.EqualFold(parts[0], "operations") || strings.Contains(strings.ToLower(r.URL.Path), "/operations/") {
		kind = "operations"
	}
	return r.Method + " " + strings.ToLower(kind)
}

// Token acquires a token for scope; the credential check's one call.
func Token(ctx context.Context, cred azcore.TokenCredential, scope string) (string, error) {
	tok, err := cred.GetToken(ctx, policy.TokenRequestOptions{Scopes: []string{scope}})
	if err != nil {
		return "", err
	}
	return tok.Token, nil
}
