package credentials

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name       string
		err        error
		roles      []string
		wantStatus metav1.ConditionStatus
		wantReason string
		wantCode   string
	}{
		{"token acquired", nil, []string{"Directory.Read.All"}, metav1.ConditionTrue, "Validation Successful", ""},
		{"forbidden Graph role", nil, []string{"Application.ReadWrite.OwnedBy"}, metav1.ConditionFalse, "Service Principal invalid", ""},
		{"wrong secret", errors.New("ClientSecretCredential authentication failed\nPOST https://login/x/oauth2/v2.0/token\n--------\nAADSTS7000215: Invalid client secret provided."), nil,
			metav1.ConditionFalse, "Service Principal invalid", "AADSTS7000215"},
		{"expired secret", errors.New("AADSTS7000222: The provided client secret keys for app 'x' are expired."), nil,
			metav1.ConditionFalse, "Service Principal invalid", "AADSTS7000222"},
		{"unknown application", errors.New("AADSTS700016: Application with identifier 'x' was not found"), nil,
			metav1.ConditionFalse, "Service Principal invalid", "AADSTS700016"},
		{"workload identity not federated", errors.New("WorkloadIdentityCredential authentication failed\nAADSTS70021: No matching federated identity record found for presented assertion."), nil,
			metav1.ConditionFalse, "Service Principal invalid", "AADSTS70021"},
		{"workload identity token expired", errors.New("AADSTS700024: Client assertion is not within its valid time range."), nil,
			metav1.ConditionFalse, "Service Principal invalid", "AADSTS700024"},
		{"issuer unreachable is not the credential's fault", errors.New("AADSTS90061: Request to External OIDC endpoint failed."), nil,
			metav1.ConditionUnknown, "Validation Unavailable", "AADSTS90061"},
		{"other AAD error is not the credential's fault", errors.New("AADSTS90002: Tenant not found"), nil,
			metav1.ConditionUnknown, "Validation Unavailable", "AADSTS90002"},
		{"network error", errors.New("dial tcp 10.0.0.1:443: connect: connection refused"), nil,
			metav1.ConditionUnknown, "Validation Unavailable", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Classify(tc.err, tc.roles)
			if got.Status != tc.wantStatus || got.Reason != tc.wantReason || got.Code != tc.wantCode {
				t.Errorf("Classify = %+v, want status %s reason %q code %q", got, tc.wantStatus, tc.wantReason, tc.wantCode)
			}
			if got.Message == "" {
				t.Error("empty message")
			}
			if tc.wantCode != "" && !strings.Contains(got.Message, tc.wantCode) {
				t.Errorf("message %q does not name %s", got.Message, tc.wantCode)
			}
		})
	}
}

func TestExpiry(t *testing.T) {
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { x := now.Add(d); return &x }
	for _, tc := range []struct {
		expires *time.Time
		want    string
	}{
		{nil, ""},
		{at(60 * 24 * time.Hour), ""},
		{at(10 * 24 * time.Hour), "the client secret expires at 2026-11-11T00:00:00Z, in 240h0m0s"},
		{at(-time.Hour), "the client secret expired at 2026-10-31T23:00:00Z"},
	} {
		if got := Expiry(tc.expires, now, 30*24*time.Hour); got != tc.want {
			t.Errorf("Expiry(%v) = %q, want %q", tc.expires, got, tc.want)
		}
	}
}

func TestRoles(t *testing.T) {
	tok := "eyJhbGciOiJub25lIn0." + base64.RawURLEncoding.EncodeToString([]byte(`{"roles":["A","Application.ReadWrite.OwnedBy"]}`)) + ".sig"
	roles, err := Roles(tok)
	if err != nil || len(roles) != 2 || roles[1] != "Application.ReadWrite.OwnedBy" {
		t.Fatalf("Roles = %v, %v", roles, err)
	}
	if _, err := Roles("opaque-token"); err == nil {
		t.Error("a non-JWT token was read")
	}
	if _, err := Roles("a.!!!.c"); err == nil {
		t.Error("a bad payload was read")
	}
}
