// Package mustgather writes what it takes to diagnose Upshift on a cluster
// into a folder laid out as OpenShift's must-gather archives are (see
// layout.go): every object of Upshift's APIs, the OpenShift objects the
// components read, the components' pods with their logs and metrics, the
// Events and Leases around them, and a summary of what was gathered and
// what was not, and why. `kubectl upshift must-gather` runs it with the
// user's credentials; the must-gather image's gather program runs it in
// the pod `oc adm must-gather` starts.
//
// What it never writes: the value of a Secret (Secrets are listed by name
// only, and only in the components' namespaces; the pull secret in
// openshift-config is never read), MachineConfigs (their Ignition files can
// carry the pull secret and other credentials), and the literal values of
// the environment variables of the pods and Deployments it writes.
//
// One kind that cannot be read (forbidden, not served, a log the node will
// not give) is noted in the summary and the rest is gathered all the same:
// Gather fails only when it cannot write the archive or reach the cluster.
package mustgather

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
)

// PartOfSelector selects what the charts install: every chart labels its
// Deployments and pods app.kubernetes.io/part-of=upshift.
const PartOfSelector = "app.kubernetes.io/part-of=upshift"

// MachineAPINamespace holds the Machines, MachineSets and the
// ControlPlaneMachineSet, and the Events about them.
const MachineAPINamespace = "openshift-machine-api"

// Options say what to gather, where to, and how.
type Options struct {
	// Config is the identity everything is read as.
	Config *rest.Config
	// Dir receives the archive; it is created, or must be empty.
	Dir string
	// Namespaces are the namespaces the components run in. Empty: every
	// namespace with a pod labelled PartOfSelector.
	Namespaces []string
	// ScrapePodsDirectly reads each component's metrics from its pod's IP
	// (from inside the cluster network: the must-gather image) with
	// Config's credentials, instead of through the apiserver's pod proxy,
	// which does not pass the caller's token on, so that a component
	// serving metrics to authenticated callers only (the charts' default)
	// answers.
	ScrapePodsDirectly bool
	// RequestTimeout bounds each log and metrics request (default 30s): a
	// node that does not answer costs that, not the whole gathering.
	RequestTimeout time.Duration
	// LogLimitBytes bounds each container log (default 100 MiB, the end
	// of the log is what is cut).
	LogLimitBytes int64
	// Progress, when set, gets a line per step.
	Progress io.Writer
}

// Summary is what a Gather did; summary.txt at the archive's root says the
// same.
type Summary struct {
	Started, Finished time.Time
	// Namespaces are the components' namespaces gathered.
	Namespaces []string
	Gathered   []Gathered
	Missing    []Missing
}

// Gathered is one kind of thing written, how many, and where.
type Gathered struct {
	What  string
	Count int
	Where string
}

// Missing is something that was not gathered, and why.
type Missing struct {
	What, Why string
}

// platformKinds are the OpenShift objects the components read, in the
// namespace they live in ("" for every namespace or cluster-scoped).
var platformKinds = []struct {
	gr        schema.GroupResource
	namespace string
}{
	{schema.GroupResource{Group: "config.openshift.io", Resource: "clusterversions"}, ""},
	{schema.GroupResource{Group: "config.openshift.io", Resource: "clusteroperators"}, ""},
	{schema.GroupResource{Group: "config.openshift.io", Resource: "infrastructures"}, ""},
	{schema.GroupResource{Group: "machineconfiguration.openshift.io", Resource: "machineconfigpools"}, ""},
	{schema.GroupResource{Resource: "nodes"}, ""},
	{schema.GroupResource{Group: "machine.openshift.io", Resource: "controlplanemachinesets"}, MachineAPINamespace},
	{schema.GroupResource{Group: "machine.openshift.io", Resource: "machines"}, MachineAPINamespace},
	{schema.GroupResource{Group: "machine.openshift.io", Resource: "machinesets"}, MachineAPINamespace},
	// ARO's own Cluster: served on Azure Red Hat OpenShift only.
	{schema.GroupResource{Group: "aro.openshift.io", Resource: "clusters"}, ""},
}

// isUpshiftGroup: Upshift's own API groups, and MUO's, whose UpgradeConfig
// the upgrade-scheduler runs. Any kind served in them is gathered, so a kind
// added later needs no change here.
func isUpshiftGroup(group string) bool {
	return strings.HasSuffix(group, ".upshift.io") || group == "upgrade.managed.openshift.io"
}

var (
	podsGR        = schema.GroupResource{Resource: "pods"}
	eventsGR      = schema.GroupResource{Resource: "events"}
	configMapsGR  = schema.GroupResource{Resource: "configmaps"}
	namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	secretsGVR    = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	leasesGR      = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}
	deploymentsGR = schema.GroupResource{Group: "apps", Resource: "deployments"}
)

// Gather writes the archive into o.Dir and returns its summary. It returns
// an error only when nothing useful could be written: the folder, the
// cluster's API discovery; everything else is a Missing entry.
func Gather(ctx context.Context, o Options) (*Summary, error) {
	if o.Config == nil {
		return nil, errors.New("mustgather: no cluster configuration")
	}
	if o.Dir == "" {
		return nil, errors.New("mustgather: no destination folder")
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 30 * time.Second
	}
	if o.LogLimitBytes <= 0 {
		o.LogLimitBytes = 100 << 20
	}
	if err := ensureEmptyDir(o.Dir); err != nil {
		return nil, err
	}
	g := &gatherer{o: o, w: writer{root: o.Dir}, sum: &Summary{Started: time.Now().UTC()}}
	var err error
	if g.kube, err = kubernetes.NewForConfig(o.Config); err != nil {
		return nil, err
	}
	if g.dyn, err = dynamic.NewForConfig(o.Config); err != nil {
		return nil, err
	}
	if g.meta, err = metadata.NewForConfig(o.Config); err != nil {
		return nil, err
	}
	if err := g.discover(); err != nil {
		return nil, err
	}
	g.run(ctx)
	g.sum.Finished = time.Now().UTC()
	if err := g.w.write(TimestampFile, []byte(g.sum.Started.Format(time.RFC3339)+"\n"+g.sum.Finished.Format(time.RFC3339)+"\n")); err != nil {
		return g.sum, err
	}
	return g.sum, g.w.write(SummaryFile, []byte(g.sum.String()))
}

type gatherer struct {
	o    Options
	w    writer
	kube kubernetes.Interface
	dyn  dynamic.Interface
	meta metadata.Interface
	// served are the listable resources, by group and resource, at the
	// version the server prefers.
	served map[schema.GroupResource]servedResource
	sum    *Summary
}

type servedResource struct {
	gvr        schema.GroupVersionResource
	namespaced bool
}

func (g *gatherer) progress(format string, args ...any) {
	if g.o.Progress != nil {
		fmt.Fprintf(g.o.Progress, format+"\n", args...)
	}
}

func (g *gatherer) gathered(what string, count int, where string) {
	g.sum.Gathered = append(g.sum.Gathered, Gathered{What: what, Count: count, Where: where})
}

func (g *gatherer) missing(what string, err error) {
	g.sum.Missing = append(g.sum.Missing, Missing{What: what, Why: reason(err)})
	g.progress("  not gathered: %s: %s", what, reason(err))
}

// reason is one line saying why a request failed.
func reason(err error) string {
	var status apierrors.APIStatus
	switch {
	case apierrors.IsForbidden(err):
		return "forbidden: " + apiMessage(err)
	case apierrors.IsUnauthorized(err):
		return "unauthorized: " + apiMessage(err)
	case errors.As(err, &status):
		return apiMessage(err)
	}
	return strings.ReplaceAll(err.Error(), "\n", " ")
}

func apiMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Message != "" {
		return strings.ReplaceAll(status.Status().Message, "\n", " ")
	}
	return strings.ReplaceAll(err.Error(), "\n", " ")
}

// discover learns which resources the server serves. A group whose
// discovery fails (an aggregated API down) is noted and the rest used.
func (g *gatherer) discover() error {
	lists, err := g.kube.Discovery().ServerPreferredResources()
	if len(lists) == 0 && err != nil {
		return fmt.Errorf("API discovery: %w", err)
	}
	if err != nil {
		g.missing("part of API discovery", err)
	}
	g.served = map[schema.GroupResource]servedResource{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") {
				continue
			}
			g.served[schema.GroupResource{Group: gv.Group, Resource: r.Name}] = servedResource{gvr: gv.WithResource(r.Name), namespaced: r.Namespaced}
		}
	}
	return nil
}

func (g *gatherer) run(ctx context.Context) {
	g.progress("gathering Upshift's objects")
	var upshift []schema.GroupResource
	for gr := range g.served {
		if isUpshiftGroup(gr.Group) {
			upshift = append(upshift, gr)
		}
	}
	sort.Slice(upshift, func(i, j int) bool { return upshift[i].String() < upshift[j].String() })
	if len(upshift) == 0 {
		g.missing("Upshift's objects", errors.New("no Upshift API is served by this cluster (no Upshift CRD installed)"))
	}
	// The namespaces Upshift's objects live in (the UpgradeConfigs') get
	// their Events and ConfigMaps gathered too.
	objectNamespaces := map[string]bool{}
	for _, gr := range upshift {
		for _, item := range g.objects(ctx, gr, "", "") {
			if ns := item.GetNamespace(); ns != "" {
				objectNamespaces[ns] = true
			}
		}
	}

	g.progress("gathering the OpenShift objects the components read")
	for _, k := range platformKinds {
		g.objects(ctx, k.gr, k.namespace, "")
	}

	namespaces := g.componentNamespaces(ctx)
	g.sum.Namespaces = namespaces
	for _, ns := range namespaces {
		g.progress("gathering namespace %s", ns)
		g.namespace(ctx, ns)
		for _, pod := range g.objects(ctx, podsGR, ns, PartOfSelector) {
			g.pod(ctx, pod)
		}
		g.objects(ctx, deploymentsGR, ns, PartOfSelector)
		g.objects(ctx, leasesGR, ns, "")
		g.secretNames(ctx, ns)
	}

	configNamespaces := union(namespaces, keys(objectNamespaces))
	for _, ns := range configNamespaces {
		g.objects(ctx, configMapsGR, ns, "")
	}
	for _, ns := range union(configNamespaces, []string{MachineAPINamespace}) {
		g.events(ctx, ns)
	}
}

// componentNamespaces are the ones asked for, or those of Upshift's pods.
func (g *gatherer) componentNamespaces(ctx context.Context) []string {
	if len(g.o.Namespaces) > 0 {
		return union(g.o.Namespaces, nil)
	}
	list, err := g.meta.Resource(podsGR.WithVersion("v1")).Namespace("").List(ctx, metav1.ListOptions{LabelSelector: PartOfSelector})
	if err != nil {
		g.missing("Upshift's namespaces", fmt.Errorf("listing the pods labelled %s in every namespace: %s; name the namespaces instead", PartOfSelector, reason(err)))
		return nil
	}
	found := map[string]bool{}
	for _, p := range list.Items {
		found[p.Namespace] = true
	}
	if len(found) == 0 {
		g.missing("Upshift's pods, logs and metrics", fmt.Errorf("no pod labelled %s in any namespace; name the namespaces the components run in if they are labelled otherwise", PartOfSelector))
	}
	return keys(found)
}

// objects lists gr in namespace ("" for all namespaces, or cluster-scoped)
// with the label selector, writes each (redacted), and returns them.
func (g *gatherer) objects(ctx context.Context, gr schema.GroupResource, namespace, selector string) []unstructured.Unstructured {
	what := gr.String()
	if namespace != "" {
		what += " in " + namespace
	}
	if selector != "" {
		what += " labelled " + selector
	}
	sr, ok := g.served[gr]
	if !ok {
		g.missing(what, errors.New("not served by this cluster"))
		return nil
	}
	if !sr.namespaced {
		namespace = ""
	}
	items, err := g.list(ctx, sr.gvr, namespace, selector)
	if err != nil {
		g.missing(what, err)
		return nil
	}
	var firstErr error
	for i := range items {
		u := &items[i]
		redact(u)
		if err := g.w.writeYAML(objectPath(gr, u), u.Object); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	if firstErr != nil {
		g.missing(what, firstErr)
	}
	where := filepath.Join(clusterScopedDir, groupDir(gr.Group), gr.Resource)
	if sr.namespaced {
		ns := namespace
		if ns == "" {
			ns = "*"
		}
		where = filepath.Join(namespacesDir, ns, groupDir(gr.Group), gr.Resource)
		if gr == podsGR {
			where = filepath.Join(namespacesDir, ns, "pods")
		}
	}
	g.gathered(what, len(items), where)
	return items
}

// objectPath is where an object goes: a pod in a folder of its own, beside
// its containers' logs, as oc writes it.
func objectPath(gr schema.GroupResource, u *unstructured.Unstructured) string {
	if gr == podsGR {
		return PodPath(u.GetNamespace(), u.GetName())
	}
	return ObjectPath(gr.Group, gr.Resource, u.GetNamespace(), u.GetName())
}

// list pages through a list, 500 at a time.
func (g *gatherer) list(ctx context.Context, gvr schema.GroupVersionResource, namespace, selector string) ([]unstructured.Unstructured, error) {
	var out []unstructured.Unstructured
	opts := metav1.ListOptions{LabelSelector: selector, Limit: 500}
	for {
		l, err := g.dyn.Resource(gvr).Namespace(namespace).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, l.Items...)
		if opts.Continue = l.GetContinue(); opts.Continue == "" {
			return out, nil
		}
	}
}

// namespace writes the Namespace object.
func (g *gatherer) namespace(ctx context.Context, ns string) {
	u, err := g.dyn.Resource(namespacesGVR).Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		g.missing("namespace "+ns, err)
		return
	}
	if err := g.w.writeYAML(NamespacePath(ns), u.Object); err != nil {
		g.missing("namespace "+ns, err)
	}
}

// events writes a namespace's Events as one EventList, where oc's tools
// look for them.
func (g *gatherer) events(ctx context.Context, ns string) {
	what := "events in " + ns
	items, err := g.list(ctx, schema.GroupVersionResource{Version: "v1", Resource: eventsGR.Resource}, ns, "")
	if err != nil {
		g.missing(what, err)
		return
	}
	list := map[string]any{"apiVersion": "v1", "kind": "EventList", "items": objectsOf(items)}
	if err := g.w.writeYAML(EventsPath(ns), list); err != nil {
		g.missing(what, err)
		return
	}
	g.gathered(what, len(items), EventsPath(ns))
}

// secretNames lists the names of a namespace's Secrets, from a metadata-only
// list: their data never leaves the apiserver. Nothing else of them is
// written: annotations can repeat the data (kubectl apply's copy).
func (g *gatherer) secretNames(ctx context.Context, ns string) {
	what := "secret names in " + ns
	list, err := g.meta.Resource(secretsGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		g.missing(what, err)
		return
	}
	names := make([]string, 0, len(list.Items))
	for _, s := range list.Items {
		names = append(names, s.Name)
	}
	sort.Strings(names)
	if err := g.w.write(SecretNamesPath(ns), nonEmptyLines(names)); err != nil {
		g.missing(what, err)
		return
	}
	g.gathered(what, len(names), SecretNamesPath(ns))
}

// pod writes a component pod's logs and metrics (objects wrote its YAML).
func (g *gatherer) pod(ctx context.Context, u unstructured.Unstructured) {
	pod := &corev1.Pod{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, pod); err != nil {
		g.missing("pod "+u.GetNamespace()+"/"+u.GetName(), err)
		return
	}
	g.logs(ctx, pod)
	g.metrics(ctx, pod)
}

// logs writes each container's log and, when it restarted, the log of the
// container before.
func (g *gatherer) logs(ctx context.Context, pod *corev1.Pod) {
	restarted := map[string]bool{}
	for _, s := range append(append([]corev1.ContainerStatus(nil), pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		restarted[s.Name] = s.RestartCount > 0 || s.LastTerminationState.Terminated != nil
	}
	for _, c := range append(append([]corev1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...) {
		g.log(ctx, pod, c.Name, false)
		if restarted[c.Name] {
			g.log(ctx, pod, c.Name, true)
		}
	}
}

func (g *gatherer) log(ctx context.Context, pod *corev1.Pod, container string, previous bool) {
	what := fmt.Sprintf("log of %s/%s container %s", pod.Namespace, pod.Name, container)
	if previous {
		what = "previous " + what
	}
	ctx, cancel := context.WithTimeout(ctx, g.o.RequestTimeout)
	defer cancel()
	limit := g.o.LogLimitBytes
	raw, err := g.kube.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{
		Container: container, Previous: previous, LimitBytes: &limit,
	}).DoRaw(ctx)
	if err != nil {
		g.missing(what, err)
		return
	}
	path := LogPath(pod.Namespace, pod.Name, container, previous)
	if err := g.w.write(path, raw); err != nil {
		g.missing(what, err)
		return
	}
	g.gathered(what, 1, path)
}

// metrics writes what the pod's port named "metrics" serves at /metrics.
func (g *gatherer) metrics(ctx context.Context, pod *corev1.Pod) {
	what := fmt.Sprintf("metrics of %s/%s", pod.Namespace, pod.Name)
	port, scheme, ok := metricsEndpoint(pod)
	if !ok {
		g.missing(what, errors.New("no container port named metrics"))
		return
	}
	ctx, cancel := context.WithTimeout(ctx, g.o.RequestTimeout)
	defer cancel()
	var body []byte
	var err error
	if g.o.ScrapePodsDirectly {
		body, err = g.scrapeDirectly(ctx, pod, scheme, port)
	} else {
		body, err = g.kube.CoreV1().Pods(pod.Namespace).ProxyGet(scheme, pod.Name, fmt.Sprint(port), "/metrics", nil).DoRaw(ctx)
		if err != nil && scheme == "https" && apierrors.IsUnauthorized(err) {
			err = fmt.Errorf("the component serves its metrics to authenticated callers only, and the apiserver's pod proxy does not pass the caller's token on (the must-gather image reads them from inside the cluster): %s", reason(err))
		}
	}
	if err != nil {
		g.missing(what, err)
		return
	}
	path := MetricsPath(pod.Namespace, pod.Name)
	if err := g.w.write(path, body); err != nil {
		g.missing(what, err)
		return
	}
	g.gathered(what, 1, path)
}

// metricsEndpoint finds the container port named "metrics" and whether the
// component serves it over HTTPS: the charts pass --metrics-secure, whose
// default is true.
func metricsEndpoint(pod *corev1.Pod) (port int32, scheme string, ok bool) {
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.Name != "metrics" {
				continue
			}
			scheme = "https"
			if slices.Contains(c.Args, "--metrics-secure=false") || slices.Contains(c.Command, "--metrics-secure=false") {
				scheme = "http"
			}
			return p.ContainerPort, scheme, true
		}
	}
	return 0, "", false
}

// scrapeDirectly reads the pod's metrics at its IP, with the credentials of
// Config (the must-gather pod's ServiceAccount token), as Prometheus does.
// The component's serving certificate is self-signed unless the chart is
// given one, so it is not verified; the address comes from the apiserver.
func (g *gatherer) scrapeDirectly(ctx context.Context, pod *corev1.Pod, scheme string, port int32) ([]byte, error) {
	if pod.Status.PodIP == "" {
		return nil, errors.New("the pod has no IP")
	}
	rt, err := rest.HTTPWrappersForConfig(g.o.Config, insecureTransport())
	if err != nil {
		return nil, err
	}
	url := fmt.Sprintf("%s://%s/metrics", scheme, hostPort(pod.Status.PodIP, port))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := (&http.Client{Transport: rt}).Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s answered %s", url, resp.Status)
	}
	return body, nil
}

func objectsOf(items []unstructured.Unstructured) []any {
	out := make([]any, 0, len(items))
	for _, u := range items {
		out = append(out, u.Object)
	}
	return out
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// union is a and b, sorted, each once.
func union(a, b []string) []string {
	m := map[string]bool{}
	for _, s := range append(append([]string(nil), a...), b...) {
		if s != "" {
			m[s] = true
		}
	}
	return keys(m)
}
