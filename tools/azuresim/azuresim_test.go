package azuresim

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
)

const (
	tenant = "11111111-1111-1111-1111-111111111111"
	client = "22222222-2222-2222-2222-222222222222"
	sub    = "33333333-3333-3333-3333-333333333333"
	vnetRG = "/subscriptions/" + sub + "/resourceGroups/vnet-rg"
	subnet = vnetRG + "/providers/Microsoft.Network/virtualNetworks/vnet/subnets/worker"
	nsgID  = "/subscriptions/" + sub + "/resourceGroups/aro-infra/providers/Microsoft.Network/networkSecurityGroups/infra-nsg"
)

const federatedSubject = "system:serviceaccount:upshift:aro-monitor"

func start(t *testing.T) *Server {
	t.Helper()
	s, _ := startWithIssuer(t)
	return s
}

// startWithIssuer starts the server with an application that is both a
// service principal and a workload identity trusting issuer's tokens for
// federatedSubject with ARO's audience.
func startWithIssuer(t *testing.T) (*Server, *Issuer) {
	t.Helper()
	s := Start()
	t.Cleanup(s.Close)
	is := StartIssuer()
	t.Cleanup(is.Close)
	s.AddApp(App{Tenant: tenant, ClientID: client, Secret: "s3cret", Federated: []FederatedCredential{is.Credential(federatedSubject, "openshift")},
		GraphRoles: []string{"Directory.Read.All"}})
	s.AddNSG(nsgID)
	s.AddSubnet(subnet, "10.0.2.0/23", "")
	return s, is
}

func secretCredential(t *testing.T, s *Server, secret string) azcore.TokenCredential {
	t.Helper()
	cred, err := azidentity.NewClientSecretCredential(tenant, client, secret, &azidentity.ClientSecretCredentialOptions{
		ClientOptions:            policy.ClientOptions{Cloud: s.Cloud(), Transport: s.Client(), Retry: policy.RetryOptions{MaxRetries: -1}},
		DisableInstanceDiscovery: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	return cred
}

func subnets(t *testing.T, s *Server, cred azcore.TokenCredential) *armnetwork.SubnetsClient {
	t.Helper()
	c, err := armnetwork.NewSubnetsClient(sub, cred, s.ARMClientOptions())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestReassociateThroughTheSDK(t *testing.T) {
	s := start(t)
	c := subnets(t, s, secretCredential(t, s, "s3cret"))
	ctx := context.Background()
	got, err := c.Get(ctx, "vnet-rg", "vnet", "worker", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Properties.NetworkSecurityGroup != nil {
		t.Fatalf("subnet starts associated: %v", *got.Properties.NetworkSecurityGroup.ID)
	}
	got.Properties.NetworkSecurityGroup = &armnetwork.SecurityGroup{ID: to.Ptr(nsgID)}
	s.SetPollsPerOperation(2)
	poller, err := c.BeginCreateOrUpdate(ctx, "vnet-rg", "vnet", "worker", got.Subnet, nil)
	if err != nil {
		t.Fatal(err)
	}
	done, err := poller.PollUntilDone(ctx, &runtimeFrequency)
	if err != nil {
		t.Fatal(err)
	}
	if *done.Properties.ProvisioningState != armnetwork.ProvisioningStateSucceeded || !strings.EqualFold(*done.Properties.NetworkSecurityGroup.ID, nsgID) {
		t.Errorf("after the PUT: %+v", done.Properties)
	}
	if s.SubnetNSG(subnet) != nsgID {
		t.Errorf("server-side association %q", s.SubnetNSG(subnet))
	}
	var seq []string
	for _, r := range s.Log() {
		if strings.HasPrefix(r.Path, "/subscriptions/") || strings.HasPrefix(r.Path, "/operations/") {
			seq = append(seq, r.Method+" "+strings.SplitN(strings.TrimPrefix(r.Path, "/"), "/", 2)[0])
		}
	}
	want := "GET subscriptions,PUT subscriptions,GET operations,GET operations,GET operations,GET subscriptions"
	if strings.Join(seq, ",") != want {
		t.Errorf("ARM calls %v, want %s", seq, want)
	}
}

var runtimeFrequency = runtimePollOptions()

func TestAADErrorsCarryTheirCodes(t *testing.T) {
	s := start(t)
	ctx := context.Background()
	scope := policy.TokenRequestOptions{Scopes: []string{ARMAudience + ".default"}}
	for _, tc := range []struct {
		name, code string
		prepare    func()
		secret     string
	}{
		{"wrong secret", "AADSTS7000215", nil, "nope"},
		{"expired secret", "AADSTS7000222", func() { s.UpdateApp(client, func(a *App) { a.SecretExpired = true }) }, "s3cret"},
		{"deleted application", "AADSTS700016", func() { s.AddApp(App{Tenant: "other", ClientID: client}) }, "s3cret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.prepare != nil {
				tc.prepare()
			}
			_, err := secretCredential(t, s, tc.secret).GetToken(ctx, scope)
			if err == nil || !strings.Contains(err.Error(), tc.code) {
				t.Fatalf("GetToken error %v, want one carrying %s", err, tc.code)
			}
		})
	}
}

func TestWorkloadIdentityAndGraphRoles(t *testing.T) {
	s, is := startWithIssuer(t)
	file := filepath.Join(t.TempDir(), "token")
	credential := func(token string) azcore.TokenCredential {
		t.Helper()
		if err := os.WriteFile(file, []byte(token), 0o600); err != nil {
			t.Fatal(err)
		}
		cred, err := azidentity.NewWorkloadIdentityCredential(&azidentity.WorkloadIdentityCredentialOptions{
			ClientOptions: policy.ClientOptions{Cloud: s.Cloud(), Transport: s.Client()},
			TenantID:      tenant, ClientID: client, TokenFilePath: file, DisableInstanceDiscovery: true,
		})
		if err != nil {
			t.Fatal(err)
		}
		return cred
	}
	cred := credential(is.Token(federatedSubject, "openshift", time.Hour))
	tok, err := cred.GetToken(context.Background(), policy.TokenRequestOptions{Scopes: []string{GraphAudience + "/.default"}})
	if err != nil {
		t.Fatal(err)
	}
	_, _, roles := readClaims(t, tok.Token)
	if len(roles) != 1 || roles[0] != "Directory.Read.All" {
		t.Errorf("graph roles %v", roles)
	}
	if _, err := subnets(t, s, cred).Get(context.Background(), "vnet-rg", "vnet", "worker", nil); err != nil {
		t.Errorf("ARM with a workload identity token: %v", err)
	}

	other := StartIssuer()
	t.Cleanup(other.Close)
	forged := other.Token(federatedSubject, "openshift", time.Hour)
	// The same issuer URL, another key: what a stolen issuer name gives.
	parts := strings.Split(forged, ".")
	payload, _ := json.Marshal(map[string]any{"iss": is.URL, "sub": federatedSubject, "aud": []string{"openshift"}, "exp": time.Now().Add(time.Hour).Unix()})
	forged = parts[0] + "." + base64.RawURLEncoding.EncodeToString(payload) + "." + parts[2]
	for _, tc := range []struct {
		name, token, code string
	}{
		{"another subject", is.Token("system:serviceaccount:other:sa", "openshift", time.Hour), "AADSTS70021"},
		{"another audience", is.Token(federatedSubject, "api://AzureADTokenExchange", time.Hour), "AADSTS70021"},
		{"another issuer", other.Token(federatedSubject, "openshift", time.Hour), "AADSTS70021"},
		{"expired", is.Token(federatedSubject, "openshift", -time.Minute), "AADSTS700024"},
		{"not signed by the issuer", forged, "AADSTS50013"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := credential(tc.token).GetToken(context.Background(), policy.TokenRequestOptions{Scopes: []string{ARMAudience + ".default"}})
			if err == nil || !strings.Contains(err.Error(), tc.code) {
				t.Errorf("got %v, want %s", err, tc.code)
			}
		})
	}
}

func TestRetryAfterAndFaults(t *testing.T) {
	s := start(t)
	c := subnets(t, s, secretCredential(t, s, "s3cret"))
	s.FailNext("GET", subnet, Fault{Status: 429, Code: "TooManyRequests", RetryAfter: time.Second})
	begin := time.Now()
	if _, err := c.Get(context.Background(), "vnet-rg", "vnet", "worker", nil); err != nil {
		t.Fatal(err)
	}
	var gets []Request
	for _, r := range s.Log() {
		if r.Method == "GET" && strings.HasPrefix(r.Path, "/subscriptions/") {
			gets = append(gets, r)
		}
	}
	if len(gets) != 2 || gets[0].Status != 429 || gets[1].Status != 200 {
		t.Fatalf("GETs %+v, want a 429 then a 200", gets)
	}
	if gap := gets[1].Time.Sub(gets[0].Time); gap < time.Second {
		t.Errorf("retried %s after a Retry-After of 1s (total %s)", gap, time.Since(begin))
	}
	if gets[0].APIVersion != "2024-05-01" {
		t.Errorf("api-version %q", gets[0].APIVersion)
	}

	s.FailNext("GET", subnet, Fault{Status: 403, Code: "AuthorizationFailed"})
	_, err := c.Get(context.Background(), "vnet-rg", "vnet", "worker", nil)
	var re *azcore.ResponseError
	if !asResponseError(err, &re) || re.ErrorCode != "AuthorizationFailed" || re.StatusCode != 403 {
		t.Errorf("403 surfaced as %v", err)
	}
	if _, err := c.Get(context.Background(), "vnet-rg", "vnet", "gone", nil); !asResponseError(err, &re) || re.StatusCode != 404 {
		t.Errorf("missing subnet: %v", err)
	}
}

func TestTugOfWarActor(t *testing.T) {
	s := start(t)
	c := subnets(t, s, secretCredential(t, s, "s3cret"))
	s.KeepDetaching(subnet, 50*time.Millisecond)
	got, err := c.Get(context.Background(), "vnet-rg", "vnet", "worker", nil)
	if err != nil {
		t.Fatal(err)
	}
	got.Properties.NetworkSecurityGroup = &armnetwork.SecurityGroup{ID: to.Ptr(nsgID)}
	p, err := c.BeginCreateOrUpdate(context.Background(), "vnet-rg", "vnet", "worker", got.Subnet, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.PollUntilDone(context.Background(), &runtimeFrequency); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for s.SubnetNSG(subnet) != "" {
		if time.Now().After(deadline) {
			t.Fatal("the actor never detached the group")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A PUT replaces the service endpoints: those it carries are provisioned
// when the operation ends, those it leaves out are gone, as in ARM.
func TestServiceEndpointsThroughTheSDK(t *testing.T) {
	s := start(t)
	c := subnets(t, s, secretCredential(t, s, "s3cret"))
	ctx := context.Background()
	s.SetSubnetServiceEndpoints(subnet, "Microsoft.Storage")
	got, err := c.Get(ctx, "vnet-rg", "vnet", "worker", nil)
	if err != nil {
		t.Fatal(err)
	}
	got.Properties.ServiceEndpoints = append(got.Properties.ServiceEndpoints,
		&armnetwork.ServiceEndpointPropertiesFormat{Service: to.Ptr("Microsoft.ContainerRegistry"), Locations: []*string{to.Ptr("*")}})
	s.SetPollsPerOperation(1)
	poller, err := c.BeginCreateOrUpdate(ctx, "vnet-rg", "vnet", "worker", got.Subnet, nil)
	if err != nil {
		t.Fatal(err)
	}
	if during := s.SubnetServiceEndpoints(subnet); len(during) != 1 || during[0] != "Microsoft.Storage" {
		t.Errorf("while the operation runs, only the provisioned endpoint counts: %v", during)
	}
	if _, err := poller.PollUntilDone(ctx, &runtimeFrequency); err != nil {
		t.Fatal(err)
	}
	if after := s.SubnetServiceEndpoints(subnet); strings.Join(after, ",") != "Microsoft.Storage,Microsoft.ContainerRegistry" {
		t.Errorf("after the PUT: %v", after)
	}
	got.Properties.ServiceEndpoints = nil
	poller, err = c.BeginCreateOrUpdate(ctx, "vnet-rg", "vnet", "worker", got.Subnet, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := poller.PollUntilDone(ctx, &runtimeFrequency); err != nil {
		t.Fatal(err)
	}
	if after := s.SubnetServiceEndpoints(subnet); len(after) != 0 {
		t.Errorf("a PUT without endpoints removes them: %v", after)
	}
}
