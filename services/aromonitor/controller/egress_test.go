package controller_test

import (
	"context"
	"crypto/x509"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	operatorv1 "github.com/openshift/api/operator/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	arov1alpha1 "github.com/upshift-io/upshift/api/aro/v1alpha1"
	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"
	"github.com/upshift-io/upshift/services/aromonitor/controller"
	"github.com/upshift-io/upshift/services/aromonitor/probe"
	"github.com/upshift-io/upshift/tools/egresssim"
)

var _ = Describe("egress", Ordered, func() {
	var (
		dns          *egresssim.DNS
		proxy        *egresssim.Proxy
		registry     *httptest.Server // reached by name: example.com
		arm          *httptest.Server // reached by IP
		hits         atomic.Int32
		clock        *testingclock.FakeClock
		roots        *x509.CertPool
		registryHost string
	)
	req := reconcile.Request{NamespacedName: types.NamespacedName{Name: "cluster"}}

	BeforeAll(func(ctx context.Context) {
		var err error
		dns, err = egresssim.StartDNS()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(dns.Close)
		dns.Set("example.com", netip.MustParseAddr("127.0.0.1"))
		proxy = egresssim.StartProxy(dns.Resolver())
		DeferCleanup(proxy.Close)
		count := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits.Add(1); w.WriteHeader(http.StatusUnauthorized) })
		registry, arm = httptest.NewTLSServer(count), httptest.NewTLSServer(count)
		DeferCleanup(registry.Close)
		DeferCleanup(arm.Close)
		roots = x509.NewCertPool()
		roots.AddCert(registry.Certificate())
		roots.AddCert(arm.Certificate())
		_, port, _ := net.SplitHostPort(registry.Listener.Addr().String())
		registryHost = "example.com:" + port
		clock = testingclock.NewFakeClock(t0)

		Expect(env.Client.Create(ctx, &arov1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}, Spec: arov1alpha1.ClusterSpec{
			ResourceID:      "/subscriptions/" + sub + "/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/openShiftClusters/c1",
			InternetChecker: arov1alpha1.InternetCheckerSpec{URLs: []string{"https://" + registryHost + "/", arm.URL + "/"}},
		}})).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			Expect(env.Client.Delete(ctx, &arov1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}})).To(Succeed())
		})
		createMonitorConfig(ctx)
	})

	prober := func(viaProxy bool) *probe.Prober {
		p := &probe.Prober{Resolver: dns.Resolver(), RootCAs: roots}
		if viaProxy {
			u, _ := url.Parse(proxy.URL)
			p.Proxy = func(*url.URL) (*url.URL, error) { return u, nil }
		}
		return p
	}
	master := func() *controller.ProbeReconciler {
		return &controller.ProbeReconciler{Client: env.Client, Recorder: recorder, Clock: clock, Prober: prober(false), Role: amv1alpha1.RoleMaster, Name: "master", Node: "c1-master-0"}
	}
	masterPass := func(ctx context.Context) (reconcile.Result, operatorv1.OperatorCondition) {
		res, err := master().Reconcile(ctx, req)
		Expect(err).NotTo(HaveOccurred())
		return res, conditionOf(cluster(ctx).Status.Conditions, arov1alpha1.InternetReachableFromMaster)
	}

	It("reports the master reachable, and does not probe again before the interval", func(ctx context.Context) {
		res, c := masterPass(ctx)
		Expect(c.Status).To(Equal(operatorv1.ConditionTrue))
		Expect(c.Reason).To(Equal("CheckDone"))
		Expect(c.Message).To(Equal("Outgoing connection successful"))
		Expect(res.RequeueAfter).To(BeNumerically("~", 5*time.Minute, 31*time.Second))
		Expect(hits.Load()).To(BeEquivalentTo(2))
		vp := record(ctx).VantagePoints[0]
		Expect(vp.Name).To(Equal("master"))
		Expect(vp.Targets).To(HaveLen(2))
		Expect(vp.Targets[0].LatencyMilliseconds).To(HaveKey(amv1alpha1.PhaseDNS), "the named target resolves through DNS")
		Expect(vp.Targets[1].LatencyMilliseconds).NotTo(HaveKey(amv1alpha1.PhaseDNS), "the IP target has no DNS phase")

		clock.Step(time.Minute)
		res, _ = masterPass(ctx) // a restart, a minute later
		Expect(hits.Load()).To(BeEquivalentTo(2), "no second round inside the interval")
		Expect(res.RequeueAfter).To(Equal(4 * time.Minute))
	})

	It("turns False after three failed rounds, naming the DNS phase, and True after two good ones", func(ctx context.Context) {
		lastSuccess := func() *metav1.Time {
			for _, ch := range record(ctx).Checks {
				if ch.Name == amv1alpha1.CheckInternetMaster {
					return ch.LastSuccessTime
				}
			}
			return nil
		}
		succeeded := lastSuccess()
		Expect(succeeded).NotTo(BeNil())
		dns.Fail("example.com", true)
		for i := 1; i <= 3; i++ {
			clock.Step(5 * time.Minute)
			_, c := masterPass(ctx)
			Expect(lastSuccess()).To(Equal(succeeded), "round %d failed: no success recorded", i)
			if i < 3 {
				Expect(c.Status).To(Equal(operatorv1.ConditionTrue), "round %d", i)
			} else {
				Expect(c.Status).To(Equal(operatorv1.ConditionFalse))
				Expect(c.Reason).To(Equal("CheckFailed"))
				Expect(c.Message).To(ContainSubstring("https://" + registryHost + "/: DNS failed"))
				Expect(c.Message).NotTo(ContainSubstring(arm.URL), "the reachable target is not blamed")
			}
		}
		dns.Heal("example.com")
		clock.Step(5 * time.Minute)
		_, c := masterPass(ctx)
		Expect(c.Status).To(Equal(operatorv1.ConditionFalse), "one good round is not enough")
		clock.Step(5 * time.Minute)
		_, c = masterPass(ctx)
		Expect(c.Status).To(Equal(operatorv1.ConditionTrue))
	})

	It("folds the worker subnets into InternetReachableFromWorker, naming the failing one and its path", func(ctx context.Context) {
		proxy.Refuse(registryHost)
		worker := func(name string, viaProxy bool) {
			r := &controller.ProbeReconciler{Client: env.Client, Clock: clock, Prober: prober(viaProxy), Role: amv1alpha1.RoleWorker, Name: name, Node: name + "-node"}
			_, err := r.Reconcile(ctx, req)
			Expect(err).NotTo(HaveOccurred())
		}
		agg := &controller.WorkerConditionReconciler{Client: env.Client, Recorder: recorder, Clock: clock, MachineNamespace: machNS}
		for i := 0; i < 3; i++ {
			clock.Step(5 * time.Minute)
			worker("worker-eastus1", false)
			worker("worker-eastus2", true)
		}
		_, err := agg.Reconcile(ctx, req)
		Expect(err).NotTo(HaveOccurred())
		c := conditionOf(cluster(ctx).Status.Conditions, arov1alpha1.InternetReachableFromWorker)
		Expect(c.Status).To(Equal(operatorv1.ConditionFalse))
		Expect(c.Message).To(ContainSubstring("from worker-eastus2 (through the proxy): https://" + registryHost + "/: Connect failed"))
		Expect(c.Message).To(ContainSubstring("1 other vantage point(s) reach every URL"))
		Expect(conditionOf(cluster(ctx).Status.Conditions, arov1alpha1.InternetReachableFromMaster).Status).To(Equal(operatorv1.ConditionTrue), "the master's condition is another writer's and stays")

		// The agents stop (their subnet's agents are gone): the results go
		// stale and the condition says so instead of keeping an old answer.
		clock.Step(16 * time.Minute)
		_, err = agg.Reconcile(ctx, req)
		Expect(err).NotTo(HaveOccurred())
		c = conditionOf(cluster(ctx).Status.Conditions, arov1alpha1.InternetReachableFromWorker)
		Expect(c.Status).To(Equal(operatorv1.ConditionUnknown))
		Expect(c.Message).To(Equal("no recent result from worker-eastus1, worker-eastus2"))
	})

	It("keeps every writer's fields: no check overwrites another's", func(ctx context.Context) {
		var got amv1alpha1.MonitorConfig
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: amv1alpha1.SingletonName}, &got)).To(Succeed())
		names := map[string]bool{}
		for _, vp := range got.Status.VantagePoints {
			names[vp.Name] = true
		}
		Expect(names).To(Equal(map[string]bool{"master": true, "worker-eastus1": true, "worker-eastus2": true}))
		managers := map[string]bool{}
		for _, mf := range got.ManagedFields {
			managers[mf.Manager] = true
		}
		Expect(managers).To(HaveKey("aro-monitor-egress-master"))
		Expect(managers).To(HaveKey("aro-monitor-egress-worker-worker-eastus2"))
		Expect(managers).To(HaveKey(controller.WorkerConditionFieldManager))
	})

	It("keys a worker subnet by its canonical name, however an agent spells it", func(ctx context.Context) {
		for _, name := range []string{"Worker-EastUS3", "worker-eastus3"} {
			clock.Step(6 * time.Minute)
			r := &controller.ProbeReconciler{Client: env.Client, Clock: clock, Prober: prober(false), Role: amv1alpha1.RoleWorker, Name: name, Node: "n"}
			_, err := r.Reconcile(ctx, req)
			Expect(err).NotTo(HaveOccurred())
			var names []string
			for _, vp := range record(ctx).VantagePoints {
				if strings.EqualFold(vp.Name, "worker-eastus3") {
					names = append(names, vp.Name)
				}
			}
			Expect(names).To(Equal([]string{"worker-eastus3"}), "written as %q", name)
		}
	})

	It("says Unknown (CheckDisabled) for the workers when the checker is off, as for the master", func(ctx context.Context) {
		agg := &controller.WorkerConditionReconciler{Client: env.Client, Recorder: recorder, Clock: clock, MachineNamespace: machNS}
		_, err := agg.Reconcile(ctx, req)
		Expect(err).NotTo(HaveOccurred())
		Expect(conditionOf(cluster(ctx).Status.Conditions, arov1alpha1.InternetReachableFromWorker).Reason).NotTo(Equal(controller.ReasonCheckDisabled))

		c := cluster(ctx)
		c.Spec.OperatorFlags = map[string]string{"aro.checker.enabled": "false"}
		Expect(env.Client.Update(ctx, c)).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			c := cluster(ctx)
			c.Spec.OperatorFlags = nil
			Expect(env.Client.Update(ctx, c)).To(Succeed())
		})
		clock.Step(time.Minute)
		_, err = agg.Reconcile(ctx, req)
		Expect(err).NotTo(HaveOccurred())
		w := conditionOf(cluster(ctx).Status.Conditions, arov1alpha1.InternetReachableFromWorker)
		Expect(w.Status).To(Equal(operatorv1.ConditionUnknown))
		Expect(w.Reason).To(Equal(controller.ReasonCheckDisabled))
		_, mc := masterPass(ctx)
		Expect(mc.Reason).To(Equal(controller.ReasonCheckDisabled))
	})
})
