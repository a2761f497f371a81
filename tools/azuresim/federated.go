package azuresim

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// FederatedCredential is an application's federated identity credential, as
// in Microsoft Entra ID: it trusts the tokens an OIDC issuer signs for one
// subject and one of the audiences. A workload identity cluster's issuer is
// its kube-apiserver's service-account issuer; the subject a ServiceAccount
// (system:serviceaccount:<namespace>:<name>); ARO's audience is "openshift".
type FederatedCredential struct {
	Issuer    string
	Subject   string
	Audiences []string
	// Client reads the issuer's discovery document and keys (it carries
	// the trust for the issuer's TLS); nil: http.DefaultClient.
	Client *http.Client
}

// Entra ID's answers to a client assertion it cannot accept.
const (
	codeNoMatchingFederation = 70021
	codeAssertionTime        = 700024
	codeAssertionSignature   = 50013
	codeIssuerUnreachable    = 90061
)

// verifyAssertion does what Entra ID does with a client assertion from a
// workload identity: find the federated credential by the token's issuer
// and subject, check the audience, fetch the issuer's signing keys through
// OIDC discovery, and verify the signature and the token's time range. A
// failure is AAD's error code and description.
func verifyAssertion(assertion string, creds []FederatedCredential, now time.Time) (code int, desc string) {
	var claims jwt.RegisteredClaims
	if _, _, err := jwt.NewParser().ParseUnverified(assertion, &claims); err != nil {
		return codeAssertionSignature, "The client assertion is not a valid JWT: " + err.Error()
	}
	var match *FederatedCredential
	for i, c := range creds {
		if c.Issuer == claims.Issuer && c.Subject == claims.Subject && slices.ContainsFunc(claims.Audience, func(a string) bool { return slices.Contains(c.Audiences, a) }) {
			match = &creds[i]
		}
	}
	if match == nil {
		return codeNoMatchingFederation, fmt.Sprintf("No matching federated identity record found for presented assertion. Assertion Issuer: '%s'. Assertion Subject: '%s'. Assertion Audience: '%s'.",
			claims.Issuer, claims.Subject, strings.Join(claims.Audience, ","))
	}
	keys, err := issuerKeys(match)
	if err != nil {
		return codeIssuerUnreachable, fmt.Sprintf("Request to External OIDC endpoint failed: %v", err)
	}
	_, err = jwt.NewParser(jwt.WithValidMethods([]string{"RS256", "ES256"}), jwt.WithTimeFunc(func() time.Time { return now }), jwt.WithExpirationRequired()).
		ParseWithClaims(assertion, &jwt.RegisteredClaims{}, func(t *jwt.Token) (any, error) {
			kid, _ := t.Header["kid"].(string)
			if k, ok := keys[kid]; ok {
				return k, nil
			}
			return nil, fmt.Errorf("no key %q at the issuer", kid)
		})
	switch {
	case errors.Is(err, jwt.ErrTokenExpired), errors.Is(err, jwt.ErrTokenNotValidYet), errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return codeAssertionTime, "Client assertion is not within its valid time range."
	case err != nil:
		return codeAssertionSignature, "Assertion failed signature validation: " + err.Error()
	}
	return 0, ""
}

// issuerKeys reads the issuer's signing keys by OIDC discovery, by key ID.
func issuerKeys(c *FederatedCredential) (map[string]any, error) {
	client := c.Client
	if client == nil {
		client = http.DefaultClient
	}
	get := func(url string, into any) error {
		resp, err := client.Get(url)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		return json.NewDecoder(resp.Body).Decode(into)
	}
	var disc struct {
		JWKSURI string `json:"jwks_uri"`
	}
	if err := get(strings.TrimSuffix(c.Issuer, "/")+"/.well-known/openid-configuration", &disc); err != nil {
		return nil, err
	}
	var set struct {
		Keys []jwk `json:"keys"`
	}
	if err := get(disc.JWKSURI, &set); err != nil {
		return nil, err
	}
	keys := map[string]any{}
	for _, k := range set.Keys {
		if pub, err := k.public(); err == nil {
			keys[k.Kid] = pub
		}
	}
	return keys, nil
}

// jwk is a public JSON Web Key (RFC 7517) of the two types issuers use.
type jwk struct {
	Kty, Kid, Alg, Use string
	Crv, X, Y          string
	N, E               string
}

func (k jwk) public() (any, error) {
	dec := func(s string) (*big.Int, error) {
		b, err := base64.RawURLEncoding.DecodeString(s)
		return new(big.Int).SetBytes(b), err
	}
	switch k.Kty {
	case "RSA":
		n, err := dec(k.N)
		if err != nil {
			return nil, err
		}
		e, err := dec(k.E)
		if err != nil {
			return nil, err
		}
		return &rsa.PublicKey{N: n, E: int(e.Int64())}, nil
	case "EC":
		if k.Crv != "P-256" {
			return nil, fmt.Errorf("curve %s", k.Crv)
		}
		x, err := base64.RawURLEncoding.DecodeString(k.X)
		if err != nil {
			return nil, err
		}
		y, err := base64.RawURLEncoding.DecodeString(k.Y)
		if err != nil {
			return nil, err
		}
		if len(x) != 32 || len(y) != 32 {
			return nil, errors.New("a P-256 coordinate is not 32 bytes")
		}
		return ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
	}
	return nil, fmt.Errorf("key type %s", k.Kty)
}

// Issuer is a local OIDC issuer of service-account-like tokens, for tests
// without a kube-apiserver: its discovery document and keys are served over
// TLS, and Token signs with its key.
type Issuer struct {
	*httptest.Server
	key *ecdsa.PrivateKey
}

// StartIssuer starts an issuer; its URL is the `iss` of its tokens.
func StartIssuer() *Issuer {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	is := &Issuer{key: key}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"issuer": is.URL, "jwks_uri": is.URL + "/keys",
			"id_token_signing_alg_values_supported": []string{"ES256"}})
	})
	point, err := key.PublicKey.Bytes() // 0x04 || X || Y
	if err != nil {
		panic(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	mux.HandleFunc("/keys", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"keys": []map[string]string{{"kty": "EC", "crv": "P-256", "kid": "issuer", "alg": "ES256", "use": "sig",
			"x": enc(point[1:33]), "y": enc(point[33:])}}})
	})
	is.Server = httptest.NewTLSServer(mux)
	return is
}

// Token is a token for subject and audience, valid for ttl from now (a
// negative ttl: already expired).
func (is *Issuer) Token(subject, audience string, ttl time.Duration) string {
	now := time.Now()
	t := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.RegisteredClaims{Issuer: is.URL, Subject: subject, Audience: jwt.ClaimStrings{audience},
		IssuedAt: jwt.NewNumericDate(now.Add(-time.Minute)), ExpiresAt: jwt.NewNumericDate(now.Add(ttl))})
	t.Header["kid"] = "issuer"
	s, err := t.SignedString(is.key)
	if err != nil {
		panic(err)
	}
	return s
}

// Credential is a federated credential trusting this issuer's tokens for
// subject and audience.
func (is *Issuer) Credential(subject, audience string) FederatedCredential {
	return FederatedCredential{Issuer: is.URL, Subject: subject, Audiences: []string{audience}, Client: is.Client()}
}
