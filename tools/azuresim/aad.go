package azuresim

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// ARMAudience is the resource ARM tokens are issued for here; the SDK asks
// for "<audience>/.default".
const ARMAudience = "https://management.core.windows.net/"

// GraphAudience is Microsoft Graph's resource.
const GraphAudience = "https://graph.microsoft.com"

// App is an application registration: a service principal with a client
// secret, or a workload identity with federated identity credentials.
type App struct {
	Tenant   string
	ClientID string
	// Secret is the client secret; SecretExpired makes AAD refuse it as expired.
	Secret        string
	SecretExpired bool
	// Federated are the federated identity credentials: a client
	// assertion must be a token one of them trusts.
	Federated []FederatedCredential
	// GraphRoles are the application roles a Graph token carries.
	GraphRoles []string
}

type issued struct {
	audience string
	expires  time.Time
}

// AddApp registers (or replaces) an application.
func (s *Server) AddApp(a App) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cp := a
	s.apps[a.ClientID] = &cp
}

// UpdateApp changes a registered application in place.
func (s *Server) UpdateApp(clientID string, f func(*App)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a, ok := s.apps[clientID]; ok {
		f(a)
	}
}

func (s *Server) openIDConfiguration(w http.ResponseWriter, tenant string) {
	base := s.srv.URL + "/" + tenant
	writeJSON(w, http.StatusOK, map[string]any{
		"token_endpoint":                        base + "/oauth2/v2.0/token",
		"authorization_endpoint":                base + "/oauth2/v2.0/authorize",
		"issuer":                                base + "/v2.0",
		"jwks_uri":                              base + "/discovery/v2.0/keys",
		"token_endpoint_auth_methods_supported": []string{"client_secret_post", "private_key_jwt", "client_secret_basic"},
		"response_types_supported":              []string{"code", "id_token", "code id_token", "id_token token"},
		"tenant_region_scope":                   "NA",
	})
}

// aadError writes AAD's OAuth error shape; the AADSTS code leads the
// description, as AAD sends it.
func aadError(w http.ResponseWriter, status int, oauthErr string, code int, description string) {
	writeJSON(w, status, map[string]any{
		"error":             oauthErr,
		"error_description": fmt.Sprintf("AADSTS%d: %s Trace ID: %s Correlation ID: %s Timestamp: %s", code, description, randomHex(8), randomHex(8), time.Now().UTC().Format("2006-01-02 15:04:05Z")),
		"error_codes":       []int{code},
		"timestamp":         time.Now().UTC().Format("2006-01-02 15:04:05Z"),
		"trace_id":          randomHex(16),
		"correlation_id":    randomHex(16),
	})
}

func (s *Server) token(w http.ResponseWriter, r *http.Request, tenant string) {
	if err := r.ParseForm(); err != nil {
		aadError(w, http.StatusBadRequest, "invalid_request", 900144, "The request body must contain the following parameter: 'grant_type'.")
		return
	}
	if f, ok := s.nextFault(http.MethodPost, "token"); ok {
		time.Sleep(f.Delay)
		if f.Status != 0 {
			aadError(w, f.Status, "temporarily_unavailable", 50196, "The server is temporarily unavailable: "+f.Code)
			return
		}
	}
	clientID := r.PostForm.Get("client_id")
	s.mu.Lock()
	app, ok := s.apps[clientID]
	var a App
	if ok {
		a = *app
	}
	s.mu.Unlock()
	switch {
	case r.PostForm.Get("grant_type") != "client_credentials":
		aadError(w, http.StatusBadRequest, "unsupported_grant_type", 70003, "The app requested an unsupported grant type.")
		return
	case !ok || a.Tenant != tenant:
		aadError(w, http.StatusBadRequest, "unauthorized_client", 700016, fmt.Sprintf("Application with identifier '%s' was not found in the directory '%s'.", clientID, tenant))
		return
	}
	if assertion := r.PostForm.Get("client_assertion"); assertion != "" {
		if code, desc := verifyAssertion(assertion, a.Federated, s.now()); code != 0 {
			aadError(w, http.StatusBadRequest, "invalid_client", code, desc)
			return
		}
	} else {
		switch {
		case a.Secret == "" || r.PostForm.Get("client_secret") != a.Secret:
			aadError(w, http.StatusUnauthorized, "invalid_client", 7000215, "Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID.")
			return
		case a.SecretExpired:
			aadError(w, http.StatusUnauthorized, "invalid_client", 7000222, fmt.Sprintf("The provided client secret keys for app '%s' are expired.", clientID))
			return
		}
	}
	// MSAL adds openid, profile and offline_access to the resource's scope.
	var audience string
	for _, sc := range strings.Fields(r.PostForm.Get("scope")) {
		if strings.HasSuffix(sc, ".default") {
			audience = strings.TrimSuffix(sc, ".default")
		}
	}
	if audience != ARMAudience {
		audience = strings.TrimSuffix(audience, "/")
	}
	var roles []string
	if audience == GraphAudience {
		roles = slices.Clone(a.GraphRoles)
	}
	expires := s.now().Add(time.Hour)
	tok := accessToken(map[string]any{"aud": audience, "appid": clientID, "tid": tenant, "roles": roles,
		"iat": s.now().Unix(), "exp": expires.Unix(), "jti": randomHex(8)})
	s.mu.Lock()
	s.tokens[tok] = issued{audience: audience, expires: expires}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{
		"token_type": "Bearer", "expires_in": 3599, "ext_expires_in": 3599, "access_token": tok,
	})
}

// accessToken builds an unsigned-looking token; nothing here checks signatures, the
// server keeps the tokens it issued.
func accessToken(claims map[string]any) string {
	h, _ := json.Marshal(map[string]string{"alg": "RS256", "typ": "JWT", "kid": "azuresim"})
	p, _ := json.Marshal(claims)
	return base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(p) + "." + randomHex(16)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
