package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/go-logr/logr"
	operatorv1 "github.com/openshift/api/operator/v1"
	eventsv1 "k8s.io/api/events/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	arov1alpha1 "github.com/upshift-io/upshift/api/aro/v1alpha1"
	amv1alpha1 "github.com/upshift-io/upshift/api/aromonitor/v1alpha1"
	"github.com/upshift-io/upshift/e2e/framework"
)

// runARO is the ARO act (DEMO_ARO=1): ARO's own Cluster object on a local
// control plane, a local Azure Resource Manager and Azure AD, a proxy per
// role in front of stand-ins for the egress endpoints, and aro-monitor's
// master role and a worker agent running as their chart's ServiceAccounts.
// It shows the conditions they write, a worker subnet losing an endpoint,
// a detached NSG put back, and another actor that keeps detaching it
// stopped by the guard rails.
func runARO(ctx context.Context, o options) (err error) {
	start := time.Now()
	ctrl.SetLogger(logr.Discard())
	bin, err := filepath.Abs(filepath.Join(o.binDir, "aro-monitor"))
	if err != nil {
		return err
	}
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("%s not found: run `make build` first", bin)
	}
	say("Starting a local control plane (etcd, kube-apiserver), a local Azure Resource Manager and Azure AD over TLS, a DNS server and a proxy per role")
	// A bare control plane: ARO's objects are not ocpsim's
	// (StartAROCluster seeds them).
	cluster, err := framework.StartCluster(ctx, framework.ClusterOptions{})
	if err != nil {
		return err
	}
	defer cluster.StopInto(&err)
	env := cluster.Env
	dir, err := os.MkdirTemp("", "upshift-demo-aro-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	say("Applying ARO's Cluster object unchanged, the credentials Secret, the Machines and a MachineSet; running aro-monitor's master role and a worker agent as their chart's ServiceAccounts")
	// Rounds every 5 s (the default is 5 minutes), two in a row to flip a
	// condition; the NSG read every 10 s, drift back within 10 minutes
	// of a re-association counts as a tug-of-war.
	spec := amv1alpha1.MonitorConfigSpec{
		Internet:    amv1alpha1.InternetConfig{Interval: "5s", Timeout: "2s", FailureThreshold: 2, SuccessThreshold: 2},
		Credentials: amv1alpha1.CredentialsConfig{Interval: "10s", ExpiryWarning: "720h"},
		NSG: amv1alpha1.NSGConfig{Mode: amv1alpha1.NSGRemediate, Interval: "10s", MaxRemediationsPerHour: 3,
			TugOfWarWindow: "10m", SuppressFor: "1h"},
		ARM: amv1alpha1.ARMConfig{RequestsPerMinute: 600},
	}
	aro, err := framework.StartAROCluster(ctx, env, bin, "aro-monitor", dir, spec)
	if err != nil {
		return err
	}
	defer aro.Close()
	for role, r := range map[string]*framework.Running{"master": aro.Master, "worker": aro.Worker} {
		defer func() {
			if stopErr := r.Stop(10 * time.Second); err == nil && stopErr != nil {
				err = fmt.Errorf("aro-monitor %s: %w\n%s", role, stopErr, r.Logs())
			}
		}()
	}
	logs := func() string { return aro.Master.Logs() + "\n" + aro.Worker.Logs() }
	// The record (the MonitorConfig's status) holds every condition
	// aro-monitor decides; ARO's types also reach ARO's Cluster, since no
	// ARO operator runs here.
	wait := func(what string, cond func(*amv1alpha1.MonitorConfigStatus) bool) error {
		err := framework.WaitFor(ctx, 90*time.Second, func() bool {
			mc := &amv1alpha1.MonitorConfig{}
			return env.Client.Get(ctx, client.ObjectKey{Name: amv1alpha1.SingletonName}, mc) == nil && cond(&mc.Status)
		})
		if err != nil {
			return fmt.Errorf("%s: %w\n%s", what, err, logs())
		}
		return printConditions(ctx, env.Client)
	}
	is := func(t string, s operatorv1.ConditionStatus) func(*amv1alpha1.MonitorConfigStatus) bool {
		return func(st *amv1alpha1.MonitorConfigStatus) bool {
			for _, cond := range st.Conditions {
				if cond.Type == t {
					return cond.Status == s
				}
			}
			return false
		}
	}
	all := func(fs ...func(*amv1alpha1.MonitorConfigStatus) bool) func(*amv1alpha1.MonitorConfigStatus) bool {
		return func(c *amv1alpha1.MonitorConfigStatus) bool {
			for _, f := range fs {
				if !f(c) {
					return false
				}
			}
			return true
		}
	}

	say("aro-monitor created its MonitorConfig to keep its record; no ARO operator runs here, so it replaces ARO's checks and writes ARO's condition types to ARO's Cluster, beside the conditions ARO's operator keeps there")
	if err := wait("the first checks", all(is(arov1alpha1.InternetReachableFromMaster, "True"), is(arov1alpha1.InternetReachableFromWorker, "True"),
		is(arov1alpha1.ServicePrincipalValid, "True"), is(amv1alpha1.NSGAssociated, "True"))); err != nil {
		return err
	}

	say("The worker subnet's proxy refuses management.azure.com: after two failed rounds InternetReachableFromWorker turns False, naming the subnet, URL and phase")
	aro.WorkerProxy.Refuse("management.azure.com:443")
	if err := wait("the worker condition", is(arov1alpha1.InternetReachableFromWorker, "False")); err != nil {
		return err
	}
	aro.WorkerProxy.Allow("management.azure.com:443")
	say("The proxy allows it again: True after two good rounds")
	if err := wait("the worker condition", is(arov1alpha1.InternetReachableFromWorker, "True")); err != nil {
		return err
	}

	say("Someone detaches the NSG from the master subnet in the portal: aro-monitor re-associates it (a PUT of the subnet, polled to completion)")
	aro.ARM.SetSubnetNSG(framework.AROMasterSubnet, "")
	if err := framework.WaitFor(ctx, 60*time.Second, func() bool { return puts(aro, framework.AROMasterSubnet) == 1 }); err != nil {
		return fmt.Errorf("no re-association: %w\n%s", err, logs())
	}
	if err := wait("the NSG check", is(amv1alpha1.NSGAssociated, "True")); err != nil {
		return err
	}

	say("Another actor (a policy, a pipeline) now detaches the worker subnet's NSG after every re-association: the drift comes back within the tug-of-war window, and aro-monitor stops")
	aro.ARM.KeepDetaching(framework.AROWorkerSubnet, 200*time.Millisecond)
	aro.ARM.SetSubnetNSG(framework.AROWorkerSubnet, "")
	if err := wait("the suppression", is(amv1alpha1.RemediationSuppressed, "True")); err != nil {
		return err
	}
	aro.ARM.KeepDetaching(framework.AROWorkerSubnet, -1)
	say("Events on the Cluster: kubectl get events -n default --field-selector regarding.kind=Cluster")
	if err := printAROEvents(ctx, env.Client); err != nil {
		return err
	}
	fmt.Printf("PUTs on the worker subnet: %d (one re-association, then suppressed)\n", puts(aro, framework.AROWorkerSubnet))

	say("aro-monitor's metrics, scraped over HTTPS as a ServiceAccount bound to the chart's metrics-reader ClusterRole")
	scraper, err := framework.InstallMetricsScraper(ctx, env, aro.Chart, "monitoring", "prometheus-aro")
	if err != nil {
		return err
	}
	for _, url := range []string{aro.Master.MetricsURL, aro.Worker.MetricsURL} {
		body, err := scraper.Scrape(url)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(body, "\n") {
			if strings.HasPrefix(line, "upshift_aro_monitor_") && !strings.Contains(line, "_bucket") {
				fmt.Println(line)
			}
		}
	}
	say("The ARO act took %s. Stopping everything.", time.Since(start).Round(time.Second))
	return nil
}

func puts(aro *framework.AROCluster, subnet string) int {
	n := 0
	for _, r := range aro.ARM.Log() {
		if r.Method == http.MethodPut && r.Path == strings.ToLower(subnet) {
			n++
		}
	}
	return n
}

// printConditions shows ARO's Cluster conditions (what the resource
// provider reads), then aro-monitor's record: its conditions and who owns
// each check.
func printConditions(ctx context.Context, c client.Client) error {
	cl := &arov1alpha1.Cluster{}
	if err := c.Get(ctx, client.ObjectKey{Name: arov1alpha1.SingletonName}, cl); err != nil {
		return err
	}
	mc := &amv1alpha1.MonitorConfig{}
	if err := c.Get(ctx, client.ObjectKey{Name: amv1alpha1.SingletonName}, mc); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	row := func(object string, cond operatorv1.OperatorCondition) {
		msg := strings.ReplaceAll(cond.Message, "\n", "; ")
		if len(msg) > 120 {
			msg = msg[:117] + "..."
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", object, cond.Type, cond.Status, cond.Reason, msg)
	}
	fmt.Fprintln(tw, "OBJECT\tTYPE\tSTATUS\tREASON\tMESSAGE")
	for _, cond := range cl.Status.Conditions {
		row("cluster.aro.openshift.io/cluster", cond)
	}
	for _, cond := range mc.Status.Conditions {
		row("monitorconfig/cluster", cond)
	}
	fmt.Fprintln(tw, "\nCHECK\tOWNERSHIP\tWHY")
	for _, ch := range mc.Status.Checks {
		if ch.Ownership == "" {
			// DaemonSets, Pods: no ARO controller to share them with.
			fmt.Fprintf(tw, "%s\t-\treported on the MonitorConfig only: ARO's operator has no such check\n", ch.Name)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", ch.Name, ch.Ownership, ch.OwnershipMessage)
	}
	return tw.Flush()
}

func printAROEvents(ctx context.Context, c client.Client) error {
	var list eventsv1.EventList
	if err := c.List(ctx, &list, client.InNamespace("default")); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TYPE\tREASON\tRELATED\tCOUNT\tNOTE")
	for _, e := range list.Items {
		if e.Regarding.Kind != "Cluster" {
			continue
		}
		related, count := "", int32(1)
		if e.Related != nil {
			related = e.Related.Kind + "/" + e.Related.Name
		}
		if e.Series != nil {
			count = e.Series.Count
		}
		note := e.Note
		if len(note) > 120 {
			note = note[:117] + "..."
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", e.Type, e.Reason, related, count, note)
	}
	return tw.Flush()
}
