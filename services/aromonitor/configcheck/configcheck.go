// Package configcheck decides ARO's DefaultIngressCertificate and
// DefaultClusterDNS conditions from the cluster's configuration, with ARO's
// rules and ARO's messages, so whoever reads the conditions sees what ARO's
// checkers would have written:
//
//   - DefaultIngressCertificate: the default IngressController must name a
//     default certificate, and on a cluster with a domain managed by ARO
//     (under aroapp.io) that certificate must be the Secret ARO's resource
//     provider installs, named after the cluster ID with "-ingress".
//   - DefaultClusterDNS: the DNS operator's configuration must not forward
//     the root zone "." (CoreDNS would not roll out); custom upstream
//     servers are supported and named in the message.
//
// A configuration object that cannot be read fails the round with
// CheckFailed and the error, as in ARO. Rounds fold into the conditions with
// a hysteresis (package rounds). No I/O.
package configcheck

import (
	"fmt"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	operatorv1 "github.com/openshift/api/operator/v1"

	arov1alpha1 "github.com/upshift-io/upshift/api/aro/v1alpha1"

	"github.com/upshift-io/upshift/services/aromonitor/rounds"
)

// The objects read, as ARO reads them.
const (
	// IngressNamespace and IngressName name the default IngressController.
	IngressNamespace = "openshift-ingress-operator"
	IngressName      = "default"
	// DNSName names the DNS operator's configuration.
	DNSName = "default"
	// CertificateSuffix follows the cluster ID in the name of the ingress
	// certificate Secret on a cluster with a managed domain.
	CertificateSuffix = "-ingress"
)

// ARO's messages.
const (
	CertificateInUse                    = "Default ingress certificate is in use"
	NoCertificateManagedDomain          = "missing ingress certificate for cluster with managed domain"
	NoCertificateCustomDomain           = "missing ingress certificate for cluster with custom domain"
	InvalidCertificateNameManagedDomain = "invalid ingress certificate name for cluster with managed domain"
	NoUpstreamDNS                       = "no in-cluster upstream DNS servers"
)

// managedDomainSuffixes are the parent domains of the domains ARO manages
// (public and US Government clouds).
var managedDomainSuffixes = []string{".aroapp.io", ".aroapp.azure.us"}

// IsManagedDomain says whether domain (the Cluster's spec.domain) is one
// ARO's resource provider manages rather than the customer's own.
func IsManagedDomain(domain string) bool {
	for _, s := range managedDomainSuffixes {
		if strings.HasSuffix(domain, s) {
			return true
		}
	}
	return false
}

// Ingress checks the default IngressController's certificate. readErr is
// the error reading the ClusterVersion or the IngressController, if any.
func Ingress(clusterID configv1.ClusterID, ic *operatorv1.IngressController, domain string, readErr error) rounds.Result {
	if readErr != nil {
		return failed(readErr.Error())
	}
	managed := IsManagedDomain(domain)
	switch {
	case ic.Spec.DefaultCertificate == nil && managed:
		return failed(NoCertificateManagedDomain)
	case ic.Spec.DefaultCertificate == nil:
		return failed(NoCertificateCustomDomain)
	case managed && ic.Spec.DefaultCertificate.Name != string(clusterID)+CertificateSuffix:
		return failed(InvalidCertificateNameManagedDomain)
	}
	return rounds.Result{Passed: true, Reason: arov1alpha1.ReasonCheckDone, Message: CertificateInUse, Summary: CertificateInUse}
}

// DNS checks the DNS operator's configuration. readErr is the error reading
// it, if any. A root-zone forward is ARO's one finding with reason
// CheckDone and status False: the check worked and found a fault.
func DNS(dns *operatorv1.DNS, readErr error) rounds.Result {
	if readErr != nil {
		return failed(readErr.Error())
	}
	var upstreams []string
	for _, s := range dns.Spec.Servers {
		for _, z := range s.Zones {
			if z == "." {
				msg := fmt.Sprintf("malformed config: %q in zones", z)
				return rounds.Result{Reason: arov1alpha1.ReasonCheckDone, Message: msg, Summary: msg}
			}
		}
		upstreams = append(upstreams, s.ForwardPlugin.Upstreams...)
	}
	msg := NoUpstreamDNS
	if len(upstreams) > 0 {
		msg = "custom upstream DNS servers in use: " + strings.Join(upstreams, ", ")
	}
	return rounds.Result{Passed: true, Reason: arov1alpha1.ReasonCheckDone, Message: msg, Summary: msg}
}

func failed(msg string) rounds.Result {
	return rounds.Result{Reason: arov1alpha1.ReasonCheckFailed, Message: msg, Summary: msg}
}
