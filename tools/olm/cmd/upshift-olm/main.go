// Command upshift-olm writes an OLM bundle per component chart and a
// file-based catalog of them (`make bundles`): each chart is rendered with
// helm template and converted, so the bundles install what the charts do.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/upshift-io/upshift/tools/olm/bundle"
	"github.com/upshift-io/upshift/tools/olm/catalog"
	"github.com/upshift-io/upshift/tools/olm/render"
)

type setFlags []string

func (s *setFlags) String() string     { return strings.Join(*s, ",") }
func (s *setFlags) Set(v string) error { *s = append(*s, v); return nil }

type options struct {
	charts, helm, version, appVersion, out, catalogDir, registry, channel, minKube string
	sets                                                                           []string
}

func main() {
	var o options
	var sets setFlags
	flag.StringVar(&o.charts, "charts", "charts", "folder of the component charts")
	flag.StringVar(&o.helm, "helm", os.Getenv("UPSHIFT_HELM"), "helm binary")
	flag.StringVar(&o.version, "version", "", "bundle version (semver, the charts' version)")
	flag.StringVar(&o.appVersion, "app-version", "", "appVersion stamped into the charts, the default image tag (empty: v<version>)")
	flag.StringVar(&o.out, "out", "dist/bundles", "where to write one bundle folder per package")
	flag.StringVar(&o.catalogDir, "catalog", "dist/catalog", "where to write the file-based catalog (and catalog.Dockerfile beside it)")
	flag.StringVar(&o.registry, "registry", "ghcr.io/upshift-io", "registry and organisation of the bundle images (<registry>/<package>-bundle:v<version>)")
	flag.StringVar(&o.channel, "channel", "", "channel of the bundles, also the default channel (empty: stable for a release, candidate for a pre-release version)")
	flag.StringVar(&o.minKube, "min-kube-version", "1.29.0", "oldest Kubernetes the components run on, unless the chart's kubeVersion says; the OpenShift minimum follows (1.29 is 4.16)")
	flag.Var(&sets, "set", "helm value for every chart, or [<chart>:]key=value for one (e.g. cpms-controller:image.digest=sha256:...); repeatable")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: upshift-olm [flags] <chart>...\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	o.sets = sets
	if o.channel == "" {
		o.channel = channelFor(o.version)
	}
	if o.appVersion == "" {
		o.appVersion = "v" + o.version
	}
	if err := run(o, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "upshift-olm:", err)
		os.Exit(1)
	}
}

func run(o options, charts []string) error {
	if len(charts) == 0 || o.version == "" || o.helm == "" {
		return fmt.Errorf("need --version, --helm and at least one chart")
	}
	var built []*bundle.Bundle
	for _, name := range charts {
		b, err := buildOne(o, name)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		dir := filepath.Join(o.out, b.Meta.Package)
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
		if err := b.Write(dir); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		warnings, err := bundle.Validate(dir, kubeMinor(b.Meta.MinKubeVersion), bundle.Validators)
		if err != nil {
			return fmt.Errorf("%s: the bundle does not validate:\n%w", name, err)
		}
		fmt.Printf("== %s: %s (%d validation warnings)\n", b.Meta.CSVName(), dir, len(warnings))
		for _, n := range b.Notes {
			fmt.Println("   note:", n)
		}
		for _, w := range warnings {
			fmt.Println("   warning:", w)
		}
		built = append(built, b)
	}

	cfg := catalog.Build(built, func(b *bundle.Bundle) string { return bundleImage(o.registry, b) })
	if err := catalog.Validate(cfg); err != nil {
		return fmt.Errorf("the catalog does not validate: %w", err)
	}
	if err := os.RemoveAll(o.catalogDir); err != nil {
		return err
	}
	if err := catalog.Write(cfg, o.catalogDir); err != nil {
		return err
	}
	df := filepath.Join(filepath.Dir(o.catalogDir), "catalog.Dockerfile")
	if err := os.WriteFile(df, []byte(catalogDockerfile(filepath.Base(o.catalogDir))), 0o644); err != nil {
		return err
	}
	fmt.Printf("== catalog of %d packages: %s (image: %s)\n", len(cfg.Packages), o.catalogDir, df)
	return nil
}

// buildOne renders a chart and builds its bundle.
func buildOne(o options, name string) (*bundle.Bundle, error) {
	p, ok := packages[name]
	if !ok {
		return nil, fmt.Errorf("no OLM package is defined for this chart (tools/olm/cmd/upshift-olm/packages.go)")
	}
	dir := filepath.Join(o.charts, name)
	chart, err := readChart(dir)
	if err != nil {
		return nil, err
	}
	objs, err := render.Chart(dir, render.Options{
		Helm: o.helm, Release: name, Namespace: bundle.InstallNamespace,
		Set:     append(slices.Clone(monitoring), valuesFor(name, o.sets)...),
		Version: o.version, AppVersion: o.appVersion,
	})
	if err != nil {
		return nil, err
	}
	meta, err := metaFor(o, name, chart, p)
	if err != nil {
		return nil, err
	}
	return bundle.Build(objs, meta)
}

// monitoring are the chart values that render the Prometheus Operator
// objects: OpenShift always has their CRDs, so the bundles carry them
// (unless they name the install namespace, which Build reports).
var monitoring = []string{"metrics.serviceMonitor.enabled=true", "prometheusRule.enabled=true"}

// valuesFor are the --set values that apply to one chart.
func valuesFor(chart string, sets []string) []string {
	var out []string
	for _, s := range sets {
		if c, kv, ok := strings.Cut(s, ":"); ok && !strings.Contains(c, "=") {
			if c == chart {
				out = append(out, kv)
			}
			continue
		}
		out = append(out, s)
	}
	return out
}

type chartFile struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Home        string   `json:"home"`
	Keywords    []string `json:"keywords"`
	KubeVersion string   `json:"kubeVersion"`
	Maintainers []struct {
		Name  string `json:"name"`
		Email string `json:"email"`
	} `json:"maintainers"`
}

func readChart(dir string) (chartFile, error) {
	var c chartFile
	raw, err := os.ReadFile(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		return c, err
	}
	if err := yaml.Unmarshal(raw, &c); err != nil {
		return c, fmt.Errorf("reading Chart.yaml: %w", err)
	}
	return c, nil
}

func metaFor(o options, name string, c chartFile, p pkgInfo) (bundle.Meta, error) {
	minKube := o.minKube
	if v := lowerBound(c.KubeVersion); v != "" {
		minKube = v
	}
	ocp, err := openShiftFor(minKube)
	if err != nil {
		return bundle.Meta{}, err
	}
	m := bundle.Meta{
		Package:            "upshift-" + name,
		Version:            o.version,
		Channels:           []string{o.channel},
		DefaultChannel:     o.channel,
		DisplayName:        p.displayName,
		Description:        c.Description,
		Keywords:           c.Keywords,
		Categories:         p.categories,
		Provider:           v1alpha1.AppLink{Name: "Upshift", URL: c.Home},
		InstallModes:       installModes(p),
		MinKubeVersion:     minKube,
		OpenShiftVersions:  ocp,
		SuggestedNamespace: "upshift",
		Required:           p.required,
		Links: []v1alpha1.AppLink{
			{Name: "Source", URL: c.Home},
			{Name: "Operator guide", URL: c.Home + "/blob/main/docs/operations/" + name + ".md"},
		},
	}
	for _, mt := range c.Maintainers {
		m.Maintainers = append(m.Maintainers, v1alpha1.Maintainer{Name: mt.Name, Email: mt.Email})
	}
	return m, nil
}

var lowerBoundRE = regexp.MustCompile(`>=\s*v?(\d+)\.(\d+)(?:\.(\d+))?`)

// lowerBound is the x.y.z of a helm kubeVersion constraint's ">=", if any.
func lowerBound(constraint string) string {
	m := lowerBoundRE.FindStringSubmatch(constraint)
	if m == nil {
		return ""
	}
	patch := m[3]
	if patch == "" {
		patch = "0"
	}
	return m[1] + "." + m[2] + "." + patch
}

// openShiftFor is the OpenShift release that ships the given Kubernetes,
// as "v4.<n>" (n and later): OpenShift 4.n runs Kubernetes 1.(n+13) from
// 4.11 (1.24) on.
func openShiftFor(kube string) (string, error) {
	parts := strings.Split(kube, ".")
	if len(parts) < 2 || parts[0] != "1" {
		return "", fmt.Errorf("min Kubernetes version %q: want 1.<minor>[.<patch>]", kube)
	}
	minor, err := strconv.Atoi(parts[1])
	if err != nil || minor < 24 {
		return "", fmt.Errorf("min Kubernetes version %q: no OpenShift 4 release mapped before 1.24", kube)
	}
	return fmt.Sprintf("v4.%d", minor-13), nil
}

func kubeMinor(v string) string {
	parts := strings.Split(v, ".")
	if len(parts) < 2 {
		return v
	}
	return parts[0] + "." + parts[1]
}

// channelFor follows OLM's channel naming: a release (1.2.3) is stable, a
// build between releases (0.0.0-<describe>, a pre-release) a candidate.
func channelFor(version string) string {
	if v, err := semver.Parse(version); err == nil && len(v.Pre) == 0 {
		return "stable"
	}
	return "candidate"
}

func bundleImage(registry string, b *bundle.Bundle) string {
	return fmt.Sprintf("%s/%s-bundle:v%s", registry, b.Meta.Package, b.Meta.Version)
}

// opmVersion is the opm image the catalog image is built on: the release
// of operator-registry whose declcfg package wrote the catalog.
const opmVersion = "v1.61.0"

func catalogDockerfile(dir string) string {
	return fmt.Sprintf(`# The catalog image: build it from this folder, e.g.
#   podman build -f catalog.Dockerfile -t <registry>/upshift-catalog:<version> .
# opm serves the file-based catalog in %[1]s/ to OLM over gRPC; the cache is
# built at image build time, so the catalog starts fast.
FROM quay.io/operator-framework/opm:%[2]s
ENTRYPOINT ["/bin/opm"]
CMD ["serve", "/configs", "--cache-dir=/tmp/cache"]
ADD %[1]s /configs
RUN ["/bin/opm", "serve", "/configs", "--cache-dir=/tmp/cache", "--cache-only"]
LABEL operators.operatorframework.io.index.configs.v1=/configs
`, dir, opmVersion)
}
