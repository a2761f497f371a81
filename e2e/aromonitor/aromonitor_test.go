package aromonitor

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	operatorv1 "github.com/openshift/api/operator/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	arov1alpha1 "github.com/upshift-io/upshift/api/aro/v1alpha1"
	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"
	"github.com/upshift-io/upshift/e2e/framework"
	"github.com/upshift-io/upshift/services/aromonitor/probe"
	"github.com/upshift-io/upshift/services/aromonitor/subnets"
	"github.com/upshift-io/upshift/tools/azuresim"
)

// aroCluster is ARO's Cluster object as stored.
func aroCluster(ctx context.Context) *arov1alpha1.Cluster {
	GinkgoHelper()
	c := &arov1alpha1.Cluster{}
	Expect(env.Client.Get(ctx, client.ObjectKey{Name: arov1alpha1.SingletonName}, c)).To(Succeed())
	return c
}

// cluster is aro-monitor's record of the cluster: the MonitorConfig's status,
// where every check keeps its conditions (ARO's types mirrored) and state.
func cluster(ctx context.Context) amv1alpha1.MonitorConfigStatus {
	GinkgoHelper()
	mc := &amv1alpha1.MonitorConfig{}
	Expect(env.Client.Get(ctx, client.ObjectKey{Name: amv1alpha1.SingletonName}, mc)).To(Succeed())
	return mc.Status
}

func conditionOf(st amv1alpha1.MonitorConfigStatus, t string) operatorv1.OperatorCondition {
	return conditionIn(st.Conditions, t)
}

func conditionIn(conds []operatorv1.OperatorCondition, t string) operatorv1.OperatorCondition {
	for _, cond := range conds {
		if cond.Type == t {
			return cond
		}
	}
	return operatorv1.OperatorCondition{}
}

func vantagePoint(st amv1alpha1.MonitorConfigStatus, name string) amv1alpha1.VantagePoint {
	for _, vp := range st.VantagePoints {
		if vp.Name == name {
			return vp
		}
	}
	return amv1alpha1.VantagePoint{}
}

// putsOn counts the PUTs on a subnet in the local ARM's access log.
func putsOn(subnetID string) int {
	n := 0
	for _, r := range aro.ARM.Log() {
		if r.Method == http.MethodPut && r.Path == strings.ToLower(subnetID) {
			n++
		}
	}
	return n
}

// clusterEvents are the Events on the Cluster with that reason.
func clusterEvents(ctx context.Context, reason string) []eventsv1.Event {
	GinkgoHelper()
	var list eventsv1.EventList
	Expect(env.Client.List(ctx, &list, client.InNamespace("default"))).To(Succeed())
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Kind == "Cluster" && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// flip watches a role's egress condition turn to want, and returns the
// vantage point as it was at that moment.
func flip(ctx context.Context, condType, vpName string, want operatorv1.ConditionStatus) (amv1alpha1.VantagePoint, operatorv1.OperatorCondition) {
	GinkgoHelper()
	var vp amv1alpha1.VantagePoint
	var cond operatorv1.OperatorCondition
	// Polled every 50 ms against 5 s rounds: the first status seen with the
	// new value is the round that turned it.
	Eventually(func() operatorv1.ConditionStatus {
		c := cluster(ctx)
		vp, cond = vantagePoint(c, vpName), conditionOf(c, condType)
		return cond.Status
	}).Should(Equal(want))
	return vp, cond
}

var _ = Describe("aro-monitor on a simulated ARO cluster", Ordered, func() {
	It("writes every condition True from both roles, the worker agent probing from its own subnet under that subnet's Lease", func(ctx SpecContext) {
		Eventually(func(g Gomega) {
			c := cluster(ctx)
			for _, t := range []string{arov1alpha1.InternetReachableFromMaster, arov1alpha1.InternetReachableFromWorker,
				arov1alpha1.ServicePrincipalValid, amv1alpha1.NSGAssociated, arov1alpha1.DefaultIngressCertificate, arov1alpha1.DefaultClusterDNS,
				amv1alpha1.SubnetServiceEndpoints, amv1alpha1.DaemonSetsAvailable, amv1alpha1.PodsHealthy} {
				g.Expect(conditionOf(c, t).Status).To(Equal(operatorv1.ConditionTrue), "%s: %+v", t, conditionOf(c, t))
			}
			g.Expect(conditionOf(c, amv1alpha1.RemediationSuppressed).Status).To(Equal(operatorv1.ConditionFalse))
		}).Should(Succeed(), func() string { return aro.Master.Logs() + aro.Worker.Logs() })
		c := cluster(ctx)
		Expect(conditionOf(c, arov1alpha1.ServicePrincipalValid).Reason).To(Equal(arov1alpha1.ReasonValidationSuccessful))
		// ARO's messages, from the objects seeded as on a healthy cluster.
		Expect(conditionOf(c, arov1alpha1.DefaultIngressCertificate).Message).To(Equal("Default ingress certificate is in use"))
		Expect(conditionOf(c, arov1alpha1.DefaultClusterDNS).Message).To(Equal("custom upstream DNS servers in use: " + framework.ARODNSUpstream))
		Expect(conditionOf(c, amv1alpha1.SubnetServiceEndpoints).Reason).To(Equal("AllPresent"))
		for _, ch := range c.Checks {
			if ch.Name == amv1alpha1.CheckDaemonSets || ch.Name == amv1alpha1.CheckPods {
				continue // no ARO controller to share them with
			}
			Expect(ch.Ownership).To(Equal(amv1alpha1.OwnershipReplace), "%s: no ARO operator runs here: %s", ch.Name, ch.OwnershipMessage)
		}
		// ARO's condition types reach ARO's Cluster, beside the other
		// writers'; aro-monitor's own findings do not.
		Eventually(func(g Gomega) {
			conds := aroCluster(ctx).Status.Conditions
			for _, t := range []string{arov1alpha1.InternetReachableFromMaster, arov1alpha1.InternetReachableFromWorker, arov1alpha1.ServicePrincipalValid,
				arov1alpha1.MachineValid, arov1alpha1.DefaultIngressCertificate, arov1alpha1.DefaultClusterDNS} {
				g.Expect(conditionIn(conds, t).Status).To(Equal(operatorv1.ConditionTrue), "%s: %+v", t, conditionIn(conds, t))
			}
			g.Expect(conds).To(HaveLen(len(framework.AROForeignConditions())+6), "no type of aro-monitor's own: %+v", conds)
		}).Should(Succeed())
		master, worker := vantagePoint(c, "master"), vantagePoint(c, "worker-subnet")
		Expect(master.Node).To(Equal(framework.AROMasterNode))
		Expect(worker.Role).To(Equal(amv1alpha1.RoleWorker))
		Expect(worker.Node).To(Equal(framework.AROWorkerNode), "the agent found its subnet through its Node and Machine")
		for _, vp := range []amv1alpha1.VantagePoint{master, worker} {
			Expect(vp.Path).To(Equal(amv1alpha1.PathProxy), "%s probes through its --probe-https-proxy", vp.Name)
			Expect(vp.Targets).To(HaveLen(len(framework.AROEgressHosts)), "the Cluster's four URLs")
		}
		for _, lease := range []client.ObjectKey{{Namespace: namespace, Name: "upshift-aro-monitor"},
			{Namespace: aro.WorkerLeaseNamespace, Name: subnets.AgentLeaseName("worker-subnet")}} {
			l := &coordinationv1.Lease{}
			Expect(env.Client.Get(ctx, lease, l)).To(Succeed(), lease.String())
			Expect(l.Spec.HolderIdentity).NotTo(BeNil())
		}
		Expect(aro.TargetHits.Load()).To(BeNumerically(">=", 2*len(framework.AROEgressHosts)))
	})

	It("turns InternetReachableFromMaster False after two failed rounds, naming the URL and phase, and True after two good ones; the workers' stays True", func(ctx SpecContext) {
		aro.MasterProxy.Refuse("login.microsoftonline.com:443")
		vp, cond := flip(ctx, arov1alpha1.InternetReachableFromMaster, "master", operatorv1.ConditionFalse)
		Expect(vp.ConsecutiveFailures).To(BeEquivalentTo(2), "False at the second failed round, not before")
		Expect(cond.Reason).To(Equal(arov1alpha1.ReasonCheckFailed))
		Expect(cond.Message).To(ContainSubstring("https://login.microsoftonline.com/: Connect failed"))
		Expect(cond.Message).NotTo(ContainSubstring("arosvc.azurecr.io"), "reachable URLs are not blamed")
		Expect(conditionOf(cluster(ctx), arov1alpha1.InternetReachableFromWorker).Status).To(Equal(operatorv1.ConditionTrue))

		aro.MasterProxy.Allow("login.microsoftonline.com:443")
		vp, _ = flip(ctx, arov1alpha1.InternetReachableFromMaster, "master", operatorv1.ConditionTrue)
		Expect(vp.ConsecutiveSuccesses).To(BeEquivalentTo(2), "True again at the second good round, not before")
	})

	It("turns InternetReachableFromWorker False from the worker subnet's agent, naming the subnet, URL and phase; the master's stays True", func(ctx SpecContext) {
		aro.WorkerProxy.Refuse("management.azure.com:443")
		vp, cond := flip(ctx, arov1alpha1.InternetReachableFromWorker, "worker-subnet", operatorv1.ConditionFalse)
		Expect(vp.ConsecutiveFailures).To(BeEquivalentTo(2))
		Expect(cond.Message).To(ContainSubstring("worker-subnet"))
		Expect(cond.Message).To(ContainSubstring("https://management.azure.com/: Connect failed"))
		Expect(conditionOf(cluster(ctx), arov1alpha1.InternetReachableFromMaster).Status).To(Equal(operatorv1.ConditionTrue))

		aro.WorkerProxy.Allow("management.azure.com:443")
		vp, _ = flip(ctx, arov1alpha1.InternetReachableFromWorker, "worker-subnet", operatorv1.ConditionTrue)
		Expect(vp.ConsecutiveSuccesses).To(BeEquivalentTo(2))
	})

	It("re-associates a detached NSG once, with an Event", func(ctx SpecContext) {
		Expect(putsOn(framework.AROMasterSubnet)).To(BeZero())
		aro.ARM.SetSubnetNSG(framework.AROMasterSubnet, "")
		Eventually(func() string { return aro.ARM.SubnetNSG(framework.AROMasterSubnet) }).Should(Equal(framework.ARONSG))
		Eventually(func() int { return len(clusterEvents(ctx, "NSGReassociated")) }).Should(Equal(1))
		Expect(clusterEvents(ctx, "NSGReassociated")[0].Note).To(ContainSubstring("master-subnet"))
		// Another full pass reads the subnet associated and does nothing.
		passes := func() int {
			n := 0
			for _, r := range aro.ARM.Log() {
				if r.Method == http.MethodGet && r.Path == strings.ToLower(framework.AROMasterSubnet) {
					n++
				}
			}
			return n
		}
		after := passes()
		Eventually(passes).Should(BeNumerically(">", after))
		Eventually(func() operatorv1.ConditionStatus {
			return conditionOf(cluster(ctx), amv1alpha1.NSGAssociated).Status
		}).Should(Equal(operatorv1.ConditionTrue))
		Expect(putsOn(framework.AROMasterSubnet)).To(Equal(1), "one re-association")
	})

	It("honours ARM's Retry-After on a 429", func(ctx SpecContext) {
		aro.ARM.FailNext(http.MethodGet, framework.AROWorkerSubnet, azuresim.Fault{Status: http.StatusTooManyRequests, Code: "TooManyRequests", RetryAfter: 2 * time.Second})
		path := strings.ToLower(framework.AROWorkerSubnet)
		var throttled, retried time.Time
		Eventually(func() bool {
			throttled, retried = time.Time{}, time.Time{}
			for _, r := range aro.ARM.Log() {
				switch {
				case r.Path != path || r.Method != http.MethodGet:
				case r.Status == http.StatusTooManyRequests:
					throttled = r.Time
				case !throttled.IsZero() && retried.IsZero():
					retried = r.Time
				}
			}
			return !retried.IsZero()
		}).Should(BeTrue())
		wait := retried.Sub(throttled)
		GinkgoWriter.Printf("ARM 429 with Retry-After: 2s: retried after %s\n", wait)
		Expect(wait).To(BeNumerically(">=", 2*time.Second), "the retry came before Retry-After")
		Expect(wait).To(BeNumerically("<", 5*time.Second), "the retry waited well past Retry-After")
	})

	It("stops re-associating once the budget is spent while another actor keeps detaching, and says so", func(ctx SpecContext) {
		aro.ARM.KeepDetaching(framework.AROWorkerSubnet, 100*time.Millisecond)
		DeferCleanup(aro.ARM.KeepDetaching, framework.AROWorkerSubnet, time.Duration(-1))
		aro.ARM.SetSubnetNSG(framework.AROWorkerSubnet, "")
		Eventually(func(g Gomega) {
			c := conditionOf(cluster(ctx), amv1alpha1.RemediationSuppressed)
			g.Expect(c.Status).To(Equal(operatorv1.ConditionTrue))
			g.Expect(c.Reason).To(Equal("BudgetExhausted"))
			g.Expect(c.Message).To(ContainSubstring("worker-subnet"))
		}).WithTimeout(60 * time.Second).Should(Succeed())
		Expect(putsOn(framework.AROWorkerSubnet)).To(Equal(2), "the budget: two re-associations per hour")
		// One Event per subnet, a series when it repeats; its related object
		// is the MachineSet the subnet was found through.
		Eventually(func() int32 {
			var n int32
			for _, e := range clusterEvents(ctx, "NSGReassociated") {
				if e.Related != nil && e.Related.Kind == "MachineSet" {
					Expect(e.Note).To(ContainSubstring("worker-subnet"))
					n += occurrences(e)
				}
			}
			return n
		}).Should(BeEquivalentTo(2))
		Eventually(func() []eventsv1.Event { return clusterEvents(ctx, "RemediationSuppressed") }).ShouldNot(BeEmpty())
		Expect(clusterEvents(ctx, "RemediationSuppressed")[0].Type).To(Equal(corev1.EventTypeWarning))
		Expect(clusterEvents(ctx, "RemediationSuppressed")[0].Note).To(ContainSubstring("budget of 2 re-association attempts per hour is spent"))
		// Suppressed: the next full pass reads the subnet and leaves it alone.
		reads := func() int {
			n := 0
			for _, r := range aro.ARM.Log() {
				if r.Method == http.MethodGet && r.Path == strings.ToLower(framework.AROWorkerSubnet) {
					n++
				}
			}
			return n
		}
		before := reads()
		Eventually(reads).Should(BeNumerically(">", before))
		Expect(putsOn(framework.AROWorkerSubnet)).To(Equal(2))
		Expect(conditionOf(cluster(ctx), amv1alpha1.NSGAssociated).Status).To(Equal(operatorv1.ConditionFalse))
	})

	It("stops at a tug-of-war: drift back within the window after its re-association, with a Warning", func(ctx SpecContext) {
		// The suite runs with the window off, so the budget spec above is
		// about the budget alone; here a window of an hour covers the
		// master subnet's re-association earlier in the suite.
		// Takes its own context: a cleanup runs after the spec's is done.
		setWindow := func(ctx context.Context, w string) {
			// A merge patch, as kubectl's: the checks write the status
			// all the time, so an update would race their resourceVersion.
			mc := &amv1alpha1.MonitorConfig{}
			Expect(env.Client.Get(ctx, client.ObjectKey{Name: amv1alpha1.SingletonName}, mc)).To(Succeed())
			patch := client.MergeFrom(mc.DeepCopy())
			mc.Spec.NSG.TugOfWarWindow = w
			Expect(env.Client.Patch(ctx, mc, patch)).To(Succeed())
		}
		updated := time.Now()
		setWindow(ctx, "1h")
		DeferCleanup(setWindow, settings.NSG.TugOfWarWindow)
		// A pass that began after the change: the window is in force.
		Eventually(func() bool {
			for _, ch := range cluster(ctx).Checks {
				if ch.Name == amv1alpha1.CheckNSG && ch.LastCheckTime != nil {
					return ch.LastCheckTime.After(updated)
				}
			}
			return false
		}).Should(BeTrue())
		DeferCleanup(aro.ARM.SetSubnetNSG, framework.AROMasterSubnet, framework.ARONSG)
		Expect(putsOn(framework.AROMasterSubnet)).To(Equal(1), "re-associated once, earlier in the suite")
		// Another actor detaches the group again.
		aro.ARM.SetSubnetNSG(framework.AROMasterSubnet, "")
		Eventually(func(g Gomega) {
			c := cluster(ctx)
			sup := conditionOf(c, amv1alpha1.RemediationSuppressed)
			g.Expect(sup.Status).To(Equal(operatorv1.ConditionTrue))
			g.Expect(sup.Reason).To(Equal("TugOfWar"), "a tug-of-war outranks the worker subnet's spent budget")
			g.Expect(sup.Message).To(ContainSubstring("master-subnet"))
			g.Expect(sup.Message).To(ContainSubstring("something else is changing this subnet"))
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			var found bool
			for _, e := range clusterEvents(ctx, "RemediationSuppressed") {
				if strings.Contains(e.Note, "master-subnet") && strings.Contains(e.Note, "something else is changing this subnet") {
					found = true
					g.Expect(e.Type).To(Equal(corev1.EventTypeWarning))
				}
			}
			g.Expect(found).To(BeTrue())
		}).Should(Succeed())
		Expect(putsOn(framework.AROMasterSubnet)).To(Equal(1), "a tug-of-war is not fought")
		Expect(aro.ARM.SubnetNSG(framework.AROMasterSubnet)).To(BeEmpty())
	})

	It("reports an expired client secret as ServicePrincipalValid=False with AAD's code, and recovers after the rotation", func(ctx SpecContext) {
		aro.ARM.UpdateApp(framework.AROClientID, func(a *azuresim.App) { a.SecretExpired = true })
		touchSecret(ctx, "expired")
		Eventually(func(g Gomega) {
			c := cluster(ctx)
			cond := conditionOf(c, arov1alpha1.ServicePrincipalValid)
			g.Expect(cond.Status).To(Equal(operatorv1.ConditionFalse))
			g.Expect(cond.Reason).To(Equal(arov1alpha1.ReasonServicePrincipalInvalid))
			g.Expect(cond.Message).To(ContainSubstring("7000222"))
			g.Expect(c.Credentials).NotTo(BeNil())
			g.Expect(c.Credentials.AADErrorCode).To(ContainSubstring("7000222"))
		}).Should(Succeed())
		Eventually(func() []eventsv1.Event { return clusterEvents(ctx, "ServicePrincipalInvalid") }).ShouldNot(BeEmpty())

		aro.ARM.UpdateApp(framework.AROClientID, func(a *azuresim.App) { a.SecretExpired = false })
		touchSecret(ctx, "rotated")
		Eventually(func() operatorv1.ConditionStatus {
			return conditionOf(cluster(ctx), arov1alpha1.ServicePrincipalValid).Status
		}).Should(Equal(operatorv1.ConditionTrue))
	})

	It("runs as a workload identity: Azure AD exchanges the master's ServiceAccount token through the cluster's OIDC issuer, and a token no federated credential trusts is reported", func(ctx SpecContext) {
		// The issuer is the kube-apiserver's service-account issuer; its
		// discovery document and keys are public, as ARO publishes them.
		Expect(env.Client.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "e2e-oidc-public"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:service-account-issuer-discovery"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:unauthenticated"}}})).To(Succeed())
		cs, err := env.Clientset()
		Expect(err).NotTo(HaveOccurred())
		token := func(audience string) string {
			tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, aro.MasterSA, &authenticationv1.TokenRequest{
				Spec: authenticationv1.TokenRequestSpec{Audiences: []string{audience}, ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
			return tr.Status.Token
		}
		var claims jwt.RegisteredClaims
		_, _, err = jwt.NewParser().ParseUnverified(token("openshift"), &claims)
		Expect(err).NotTo(HaveOccurred())
		anonymous := rest.AnonymousClientConfig(env.Config)
		issuerClient, err := rest.HTTPClientFor(anonymous)
		Expect(err).NotTo(HaveOccurred())
		const miClientID = "44444444-4444-4444-4444-444444444444"
		aro.ARM.AddApp(azuresim.App{Tenant: framework.AROTenant, ClientID: miClientID, Federated: []azuresim.FederatedCredential{{
			Issuer: claims.Issuer, Subject: "system:serviceaccount:" + namespace + ":" + aro.MasterSA, Audiences: []string{"openshift"}, Client: issuerClient}}})

		// The Secret as ARO writes it on a workload identity cluster: the
		// token file instead of a client secret. The file is what the
		// chart's projected volume holds.
		file := filepath.Join(GinkgoT().TempDir(), "token")
		secret := &corev1.Secret{}
		key := client.ObjectKey{Namespace: framework.AROCredentialsNamespace, Name: framework.AROCredentialsName}
		Expect(env.Client.Get(ctx, key, secret)).To(Succeed())
		servicePrincipal := secret.DeepCopy()
		DeferCleanup(func(ctx context.Context) {
			s := &corev1.Secret{}
			Expect(env.Client.Get(ctx, key, s)).To(Succeed())
			s.Data = servicePrincipal.Data
			Expect(env.Client.Update(ctx, s)).To(Succeed())
			Eventually(func() string { return ptr.Deref(cluster(ctx).Credentials, amv1alpha1.CredentialStatus{}).Kind }).Should(Equal("ServicePrincipal"))
		})
		useToken := func(tok string) time.Time {
			Expect(os.WriteFile(file, []byte(tok), 0o600)).To(Succeed())
			s := &corev1.Secret{}
			Expect(env.Client.Get(ctx, key, s)).To(Succeed())
			s.Data = map[string][]byte{"azure_tenant_id": []byte(framework.AROTenant), "azure_client_id": []byte(miClientID),
				"azure_subscription_id": []byte(framework.AROSubscription), "azure_federated_token_file": []byte(file)}
			// A new version of the Secret, as a rotation makes: checked at
			// once rather than at the next retry.
			if s.Annotations == nil {
				s.Annotations = map[string]string{}
			}
			s.Annotations["e2e.upshift.io/token"] = strconv.FormatInt(time.Now().UnixNano(), 10)
			changed := time.Now()
			Expect(env.Client.Update(ctx, s)).To(Succeed())
			return changed
		}

		// A token for another audience: no federated credential trusts it.
		useToken(token("api://AzureADTokenExchange"))
		Eventually(func(g Gomega) {
			c := cluster(ctx)
			cond := conditionOf(c, arov1alpha1.ServicePrincipalValid)
			g.Expect(cond.Status).To(Equal(operatorv1.ConditionFalse))
			g.Expect(cond.Reason).To(Equal(arov1alpha1.ReasonServicePrincipalInvalid))
			g.Expect(cond.Message).To(ContainSubstring("no federated identity credential"))
			g.Expect(c.Credentials.Kind).To(Equal("WorkloadIdentity"))
			g.Expect(c.Credentials.AADErrorCode).To(Equal("AADSTS70021"))
		}).Should(Succeed())

		// The audience ARO's federated credentials trust.
		changed := useToken(token("openshift"))
		Eventually(func(g Gomega) {
			c := cluster(ctx)
			g.Expect(conditionOf(c, arov1alpha1.ServicePrincipalValid).Status).To(Equal(operatorv1.ConditionTrue), "%+v", conditionOf(c, arov1alpha1.ServicePrincipalValid))
			g.Expect(c.Credentials.ClientID).To(Equal(miClientID))
			g.Expect(conditionIn(aroCluster(ctx).Status.Conditions, arov1alpha1.ServicePrincipalValid).Status).To(Equal(operatorv1.ConditionTrue))
		}).Should(Succeed())
		// The NSG check reads every subnet from ARM with the same identity:
		// a pass after the change that read them all (Unknown would be a
		// credential or ARM failure).
		Eventually(func(g Gomega) {
			c := cluster(ctx)
			var nsgCheck amv1alpha1.CheckStatus
			for _, ch := range c.Checks {
				if ch.Name == amv1alpha1.CheckNSG {
					nsgCheck = ch
				}
			}
			g.Expect(nsgCheck.LastCheckTime).NotTo(BeNil())
			g.Expect(nsgCheck.LastCheckTime.Time).To(BeTemporally(">=", changed.Truncate(time.Second)))
			g.Expect(conditionOf(c, amv1alpha1.NSGAssociated).Status).NotTo(Equal(operatorv1.ConditionUnknown), "%+v", conditionOf(c, amv1alpha1.NSGAssociated))
		}).Should(Succeed())
	})

	It("with workloadIdentity.enabled, gives the master a projected ServiceAccount token for ARO's audience where ARO's Secret points, as the ServiceAccount the chart names", func() {
		ch, err := framework.RenderChart("aro-monitor", "aro", namespace, "workloadIdentity.enabled=true", "serviceAccount.masterName=aro-monitor-mi")
		Expect(err).NotTo(HaveOccurred())
		var master *appsv1.Deployment
		for _, u := range ch.Kinds("Deployment") {
			if strings.HasSuffix(u.GetName(), "-master") {
				master = &appsv1.Deployment{}
				Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, master)).To(Succeed())
			}
		}
		Expect(master).NotTo(BeNil())
		pod := master.Spec.Template.Spec
		Expect(pod.ServiceAccountName).To(Equal("aro-monitor-mi"), "the subject of the federated credential")
		Expect(pod.Volumes).To(ContainElement(corev1.Volume{Name: "bound-sa-token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: "openshift", ExpirationSeconds: ptr.To[int64](3600), Path: "token"}}}}}}))
		Expect(pod.Containers[0].VolumeMounts).To(ContainElement(corev1.VolumeMount{Name: "bound-sa-token", MountPath: "/var/run/secrets/openshift/serviceaccount", ReadOnly: true}))
		var bound []string
		for _, u := range ch.Kinds("ClusterRoleBinding", "RoleBinding") {
			subjects, _, _ := unstructured.NestedSlice(u.Object, "subjects")
			for _, sub := range subjects {
				if name, _ := sub.(map[string]any)["name"].(string); name == "aro-monitor-mi" {
					bound = append(bound, u.GetName())
				}
			}
		}
		Expect(bound).NotTo(BeEmpty(), "the master's permissions follow its ServiceAccount's name")
	})

	It("left the other writers' conditions on ARO's Cluster as they were, in place, and marked its re-associations as ARO does", func(ctx SpecContext) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(arov1alpha1.GroupVersion.WithKind("Cluster"))
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: arov1alpha1.SingletonName}, u)).To(Succeed())
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		foreign := framework.AROForeignConditions()
		Expect(len(conds)).To(BeNumerically(">=", len(foreign)))
		Expect(conds[:len(foreign)]).To(Equal(foreign), "first, unchanged, as ARO's operator wrote them")
		stamp := u.GetAnnotations()[arov1alpha1.LastSubnetReconcileAnnotation]
		at, err := time.Parse(time.RFC1123, stamp)
		Expect(err).NotTo(HaveOccurred(), "ARO's format, which the resource provider parses: %q", stamp)
		Expect(at).To(BeTemporally(">=", started.Truncate(time.Second)))
	})

	It("serves its metrics to the chart's metrics reader, was never refused a request and used every permission its chart grants", func(ctx SpecContext) {
		Eventually(func(g Gomega) {
			body, err := scraper.Scrape(aro.Master.MetricsURL)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(body).To(ContainSubstring(`upshift_aro_monitor_condition{status="True",type="InternetReachableFromMaster"} 1`))
			g.Expect(body).To(ContainSubstring(`upshift_aro_monitor_remediations_total{action="reassociate",result="success"} 3`))
			g.Expect(body).To(ContainSubstring(`upshift_aro_monitor_remediations_total{action="suppress",result="done"}`))
			g.Expect(body).To(ContainSubstring(`upshift_aro_monitor_arm_requests_total{code="429",operation="GET subnets"} 1`))
			g.Expect(body).To(ContainSubstring(`upshift_aro_monitor_probe_failures_total{phase="Connect",role="master",target="login.microsoftonline.com"}`))
			g.Expect(body).To(ContainSubstring(`upshift_aro_monitor_last_success_timestamp_seconds{check="Credentials",vantage_point=""}`))
			g.Expect(body).To(ContainSubstring(`upshift_aro_monitor_check_ownership{check="NSG",ownership="Replace"} 1`))
			body, err = scraper.Scrape(aro.Worker.MetricsURL)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(body).To(ContainSubstring(`upshift_aro_monitor_probe_phase_duration_seconds_count{phase="TLS",role="worker",target="arosvc.azurecr.io"}`))
			g.Expect(body).To(ContainSubstring(`upshift_aro_monitor_last_success_timestamp_seconds{check="InternetWorker",vantage_point="worker-subnet"}`))
		}).Should(Succeed())
		measure()

		perms, err := aro.Chart.Permissions()
		Expect(err).NotTo(HaveOccurred())
		for _, sa := range []string{aro.MasterSA, aro.WorkerSA} {
			roles, err := aro.Chart.BoundRoles(namespace, sa)
			Expect(err).NotTo(HaveOccurred())
			Expect(roles).NotTo(BeEmpty())
			Eventually(func(g Gomega) {
				evs, err := env.AuditEvents(framework.ServiceAccountUser(namespace, sa))
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(framework.Refused(evs)).To(BeEmpty(), sa)
				g.Expect(framework.Unused(withoutSeriesPatch(framework.OfRoles(perms, roles...)), evs)).To(BeEmpty(), sa)
			}).Should(Succeed())
		}
	})
})

// occurrences is how often an Event happened: once, or its series' count.
func occurrences(e eventsv1.Event) int32 {
	if e.Series != nil {
		return e.Series.Count
	}
	return 1
}

// touchSecret changes the credentials Secret as a rotation does (a new
// version): the check runs at once, with a new credential.
func touchSecret(ctx context.Context, value string) {
	GinkgoHelper()
	s := &corev1.Secret{}
	Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: framework.AROCredentialsNamespace, Name: framework.AROCredentialsName}, s)).To(Succeed())
	patch := client.MergeFrom(s.DeepCopy())
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	s.Annotations["e2e.upshift.io/rotation"] = value
	Expect(env.Client.Patch(ctx, s, patch)).To(Succeed())
}

// withoutSeriesPatch drops "patch events": the events library patches only
// when one Event repeats within its cache window.
func withoutSeriesPatch(perms []framework.Permission) []framework.Permission {
	var out []framework.Permission
	for _, p := range perms {
		if p.APIGroup == "events.k8s.io" && p.Resource == "events" && p.Verb == "patch" {
			continue
		}
		out = append(out, p)
	}
	return out
}

// measure logs the suite's figures: ARM and AAD calls per check (scaled to
// the default intervals), each role's peak memory, and the probe's overhead
// over a plain HEAD against the same loopback server.
func measure() {
	elapsed := time.Since(started)
	var subnetGETs, tokens, puts, polls int
	for _, r := range aro.ARM.Log() {
		switch {
		case r.Method == http.MethodGet && strings.Contains(r.Path, "/subnets/"):
			subnetGETs++
		case r.Method == http.MethodPost && strings.HasSuffix(r.Path, "/token"):
			tokens++
		case r.Method == http.MethodPut:
			puts++
		case r.Method == http.MethodGet && strings.HasPrefix(r.Path, "/operations/"):
			polls++
		}
	}
	masterReads := 0
	for _, r := range aro.ARM.Log() {
		if r.Method == http.MethodGet && r.Path == strings.ToLower(framework.AROMasterSubnet) {
			masterReads++
		}
	}
	perPass := float64(subnetGETs) / float64(max(masterReads, 1))
	GinkgoWriter.Printf("FIGURES: over %s: %d subnet GETs in %d NSG passes (%.1f per pass: one per subnet) -> at the 15m default %.0f ARM reads/hour for 2 subnets; "+
		"%d PUTs and %d operation polls (remediation only); %d AAD token requests for %d credential checks and the ARM client (tokens are cached until they expire or the Secret changes)\n",
		elapsed.Round(time.Second), subnetGETs, masterReads, perPass, 4*perPass, puts, polls, tokens, int(elapsed/(10*time.Second)))
	fmt.Fprintf(GinkgoWriter, "FIGURES: egress at the 5m default: 12 rounds/hour per vantage point x %d URLs = %d HEADs/hour, no ARM calls\n",
		len(framework.AROEgressHosts), 12*len(framework.AROEgressHosts))
	for role, r := range map[string]*framework.Running{"master": aro.Master, "worker": aro.Worker} {
		GinkgoWriter.Printf("FIGURES: %s role peak RSS (VmHWM): %s\n", role, vmHWM(r.Pid()))
	}
	probeOverhead()
}

var hwm = regexp.MustCompile(`(?m)^VmHWM:\s+(\d+) kB`)

func vmHWM(pid int) string {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return err.Error()
	}
	m := hwm.FindSubmatch(raw)
	if m == nil {
		return "unknown"
	}
	kb, _ := strconv.Atoi(string(m[1]))
	return fmt.Sprintf("%.1f MiB", float64(kb)/1024)
}

// probeOverhead times n probes (new connection, phases traced) against n
// plain HEADs on new connections to the same loopback TLS server.
func probeOverhead() {
	const n = 50
	roots := x509.NewCertPool()
	roots.AddCert(aro.Targets.Certificate())
	url := aro.Targets.URL + "/"
	p := &probe.Prober{RootCAs: roots, Timeout: 5 * time.Second}
	plain := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}}
	var probed, headed time.Duration
	for range n {
		t := time.Now()
		r := p.Probe(context.Background(), url)
		probed += time.Since(t)
		Expect(r.OK()).To(BeTrue(), "%v", r.Err)
		t = time.Now()
		req, _ := http.NewRequest(http.MethodHead, url, nil)
		resp, err := plain.Do(req)
		headed += time.Since(t)
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
	}
	GinkgoWriter.Printf("FIGURES: probe vs plain HEAD on a new loopback TLS connection, mean of %d: %s vs %s (overhead %s)\n",
		n, probed/n, headed/n, (probed-headed)/n)
}
