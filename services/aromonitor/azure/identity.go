// Package azure builds aro-monitor's Azure clients: the credential from the
// credentials Secret (rebuilt when the Secret changes, so rotation needs no
// restart), one ARM pipeline per subscription with a shared request budget,
// and the call metrics.
package azure

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The credentials Secret's keys, as OpenShift's cloud-credential-operator
// writes them for Azure: a service principal has a client secret, a workload
// identity a federated token file.
const (
	KeyClientID           = "azure_client_id"
	KeyClientSecret       = "azure_client_secret"
	KeyTenantID           = "azure_tenant_id"
	KeySubscriptionID     = "azure_subscription_id"
	KeyFederatedTokenFile = "azure_federated_token_file"
)

// ExpiresAnnotation on the credentials Secret, an RFC 3339 time, tells
// aro-monitor when the client secret expires; whoever rotates the secret sets
// it. Azure AD does not reveal the expiry to the principal itself.
const ExpiresAnnotation = "aromonitor.upshift.io/client-secret-expires"

// Identity is the credential material of the credentials Secret.
type Identity struct {
	TenantID, ClientID, SubscriptionID string
	// Exactly one of ClientSecret and FederatedTokenFile is set.
	ClientSecret       string
	FederatedTokenFile string
	// Version identifies the Secret's content (its resourceVersion): a new
	// version means a new credential.
	Version string
	// (When it changed is not in the object as the cache holds it: managed
	// fields are stripped. The credential check records when it first sees
	// each version instead.)
	// Expires is the client secret's expiry, when the Secret says it.
	Expires *time.Time
}

// Kind names the identity type for the status.
func (i Identity) Kind() string {
	if i.FederatedTokenFile != "" {
		return "WorkloadIdentity"
	}
	return "ServicePrincipal"
}

// IdentityFromSecret reads the Secret; the error names what is missing.
func IdentityFromSecret(s *corev1.Secret) (Identity, error) {
	get := func(k string) string { return string(s.Data[k]) }
	id := Identity{
		TenantID: get(KeyTenantID), ClientID: get(KeyClientID), SubscriptionID: get(KeySubscriptionID),
		ClientSecret: get(KeyClientSecret), FederatedTokenFile: get(KeyFederatedTokenFile),
		Version: s.ResourceVersion,
	}
	var missing []string
	for k, v := range map[string]string{KeyTenantID: id.TenantID, KeyClientID: id.ClientID} {
		if v == "" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return id, fmt.Errorf("secret %s/%s has no %v", s.Namespace, s.Name, missing)
	}
	if (id.ClientSecret == "") == (id.FederatedTokenFile == "") {
		return id, fmt.Errorf("secret %s/%s must hold exactly one of %s and %s", s.Namespace, s.Name, KeyClientSecret, KeyFederatedTokenFile)
	}
	if v, ok := s.Annotations[ExpiresAnnotation]; ok {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return id, fmt.Errorf("secret %s/%s annotation %s: %q is not an RFC 3339 time", s.Namespace, s.Name, ExpiresAnnotation, v)
		}
		id.Expires = &t
	}
	return id, nil
}
