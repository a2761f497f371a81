// Package azuresim is a local Azure Resource Manager and Azure AD for tests:
// an HTTPS server speaking the ARM paths and JSON that armnetwork's subnet and
// network security group clients use — with long-running PUTs through
// Azure-AsyncOperation, ARM's error shape and Retry-After — and the AAD
// OpenID configuration and v2.0 token endpoints that azidentity's
// client-secret and client-assertion credentials call. The real SDK code
// paths run against it unchanged; resources are stored and written back with
// the SDK's own model types, so the JSON shapes are the SDK's.
//
// Tests script it: per-route faults (first N calls fail with a status, an ARM
// error code, a Retry-After, or a delay), an actor that keeps detaching a
// subnet's network security group after every re-association, expired or
// unknown credentials, and an access log to count and time the calls.
package azuresim
