// Package credentials decides what a credential check's outcome means: the
// ServicePrincipalValid condition ARO defines, from the error a token request
// returned, the roles in the token, and the secret's expiry where known.
package credentials

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	arov1alpha1 "github.com/upshift-io/upshift/api/aro/v1alpha1"
	"github.com/upshift-io/upshift/libs/truncate"
)

// The AAD error codes that mean the credential itself is bad, as ARO reads
// them; every other failure (network, throttling, AAD outage) says nothing
// about the credential and is Unknown.
var invalidCodes = map[string]string{
	"AADSTS7000215": "the client secret is wrong",
	"AADSTS7000222": "the client secret has expired",
	"AADSTS700016":  "the application was not found in the tenant",
	// A workload identity's own failures: the projected ServiceAccount
	// token is not one the application's federated credentials trust
	// (issuer, subject or audience), it has expired (nothing refreshes the
	// file), or its signature does not verify against the keys the issuer
	// publishes (a signing key rotated without being published).
	"AADSTS70021":  "no federated identity credential of the application trusts the ServiceAccount token (issuer, subject or audience)",
	"AADSTS700024": "the ServiceAccount token has expired",
	"AADSTS50013":  "the ServiceAccount token's signature does not verify against the issuer's published keys",
}

// ForbiddenGraphRole is the Graph application role a cluster's service
// principal must not hold: it lets the principal change other applications.
const ForbiddenGraphRole = "Application.ReadWrite.OwnedBy"

var aadCode = regexp.MustCompile(`AADSTS[0-9]+`)

// Outcome is the condition a check result maps to.
type Outcome struct {
	Status  metav1.ConditionStatus
	Reason  string
	Message string
	// Code is the AAD error code, when the failure carried one.
	Code string
}

// Classify maps a token request's error (nil for success) and, on success,
// the token's roles to the ServicePrincipalValid outcome.
func Classify(err error, roles []string) Outcome {
	if err == nil {
		if slices.Contains(roles, ForbiddenGraphRole) {
			return Outcome{Status: metav1.ConditionFalse, Reason: arov1alpha1.ReasonServicePrincipalInvalid,
				Message: fmt.Sprintf("the service principal holds the Microsoft Graph role %s, which it must not have", ForbiddenGraphRole)}
		}
		return Outcome{Status: metav1.ConditionTrue, Reason: arov1alpha1.ReasonValidationSuccessful,
			Message: "a token was acquired with the cluster's credentials"}
	}
	code := aadCode.FindString(err.Error())
	if why, ok := invalidCodes[code]; ok {
		return Outcome{Status: metav1.ConditionFalse, Reason: arov1alpha1.ReasonServicePrincipalInvalid, Code: code,
			Message: fmt.Sprintf("%s: %s", why, summary(err.Error()))}
	}
	return Outcome{Status: metav1.ConditionUnknown, Reason: arov1alpha1.ReasonValidationUnavailable, Code: code,
		Message: "could not validate the credentials: " + summary(err.Error())}
}

// Expiry says whether a known expiry time is near: "" when unknown or far,
// otherwise a message for a Warning Event and the condition's message.
func Expiry(expires *time.Time, now time.Time, warning time.Duration) string {
	if expires == nil {
		return ""
	}
	left := expires.Sub(now)
	switch {
	case left <= 0:
		return fmt.Sprintf("the client secret expired at %s", expires.UTC().Format(time.RFC3339))
	case left <= warning:
		return fmt.Sprintf("the client secret expires at %s, in %s", expires.UTC().Format(time.RFC3339), left.Round(time.Hour))
	}
	return ""
}

// Roles reads the `roles` claim of a JWT access token. The signature is not
// checked: the token came straight from the identity provider over TLS, and
// only the caller's own roles are read from it.
func Roles(token string) ([]string, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, fmt.Errorf("the access token is not a JWT: %d parts", len(parts))
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return nil, fmt.Errorf("the access token's payload is not base64url: %w", err)
	}
	var claims struct {
		Roles []string `json:"roles"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		return nil, fmt.Errorf("the access token's payload is not JSON: %w", err)
	}
	return claims.Roles, nil
}

// summary is the line a person needs from an azidentity error, which carries
// a multi-line dump of the response: the AAD code's line when there is one.
func summary(s string) string {
	if i := strings.Index(s, "AADSTS"); i >= 0 {
		return truncateSummary(strings.TrimSpace(strings.SplitN(s[i:], "\n", 2)[0]))
	}
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return truncateSummary(l)
		}
	}
	return truncateSummary(s)
}

// summaryLimit bounds the line taken from an error: a condition message
// reads one line, not a response dump.
const summaryLimit = 512

func truncateSummary(s string) string { return truncate.String(s, summaryLimit) }
