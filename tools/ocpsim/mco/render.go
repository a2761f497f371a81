package mco

import (
	"crypto/md5" //nolint:gosec // the MCO names rendered configs by an md5 of their content
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// RenderedPrefix starts every rendered config name.
const RenderedPrefix = "rendered-"

// IsRendered reports a rendered (controller-generated) MachineConfig.
func IsRendered(mc *mcfgv1.MachineConfig) bool { return strings.HasPrefix(mc.Name, RenderedPrefix) }

// SelectSources returns the non-rendered MachineConfigs the pool's
// machineConfigSelector picks, sorted by name (the MCO merges in name order).
func SelectSources(pool *mcfgv1.MachineConfigPool, all []*mcfgv1.MachineConfig) ([]*mcfgv1.MachineConfig, error) {
	if pool.Spec.MachineConfigSelector == nil {
		return nil, fmt.Errorf("pool %s has no machineConfigSelector", pool.Name)
	}
	sel, err := metav1.LabelSelectorAsSelector(pool.Spec.MachineConfigSelector)
	if err != nil {
		return nil, fmt.Errorf("pool %s: invalid machineConfigSelector: %w", pool.Name, err)
	}
	var out []*mcfgv1.MachineConfig
	for _, mc := range all {
		if !IsRendered(mc) && !sel.Empty() && sel.Matches(labels.Set(mc.Labels)) {
			out = append(out, mc)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no MachineConfigs found matching selector %s", sel)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// ContentHash hashes the specs of the source configs (not their names or the
// pool), so two pools selecting the same sources render equal content.
func ContentHash(sources []*mcfgv1.MachineConfig) string {
	h := md5.New() //nolint:gosec
	for _, mc := range sources {
		b, _ := json.Marshal(mc.Spec)
		h.Write(b)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// RenderedHash extracts the content hash from a rendered config name.
func RenderedHash(name string) string {
	if i := strings.LastIndex(name, "-"); i >= 0 {
		return name[i+1:]
	}
	return name
}

// SameContent reports whether two rendered configs have identical content, in
// which case moving between them needs no drain and no reboot.
func SameContent(a, b string) bool {
	return a != "" && b != "" && RenderedHash(a) == RenderedHash(b)
}

// ReleaseVersionAnnotation marks the release a template-generated source
// config belongs to; the rendered config's release-image-version comes from it.
const ReleaseVersionAnnotation = "ocpsim.upshift.io/release-version"

// Render merges the pool's source configs into its rendered config.
// releaseVersion is written into release-image-version; when empty it is
// taken from the sources' ReleaseVersionAnnotation.
func Render(pool *mcfgv1.MachineConfigPool, all []*mcfgv1.MachineConfig, releaseVersion string) (*mcfgv1.MachineConfig, error) {
	sources, err := SelectSources(pool, all)
	if err != nil {
		return nil, err
	}
	if releaseVersion == "" {
		for _, mc := range sources {
			if v := mc.Annotations[ReleaseVersionAnnotation]; v != "" {
				releaseVersion = v
			}
		}
	}
	spec := mcfgv1.MachineConfigSpec{KernelArguments: []string{}, Extensions: []string{}}
	for _, mc := range sources {
		if mc.Spec.OSImageURL != "" {
			spec.OSImageURL = mc.Spec.OSImageURL
		}
		if mc.Spec.KernelType != "" {
			spec.KernelType = mc.Spec.KernelType
		}
		spec.FIPS = spec.FIPS || mc.Spec.FIPS
		spec.KernelArguments = append(spec.KernelArguments, mc.Spec.KernelArguments...)
		spec.Extensions = append(spec.Extensions, mc.Spec.Extensions...)
	}
	ign, _ := json.Marshal(map[string]any{"ignition": map[string]string{"version": "3.5.0"}})
	spec.Config = runtime.RawExtension{Raw: ign}
	return &mcfgv1.MachineConfig{
		ObjectMeta: metav1.ObjectMeta{
			Name: RenderedPrefix + pool.Name + "-" + ContentHash(sources),
			Annotations: map[string]string{
				GeneratedByVersionAnnotation: ControllerVersion,
				ReleaseImageVersionAnnot:     releaseVersion,
			},
		},
		Spec: spec,
	}, nil
}

// Sources lists the source configs as the pool's configuration.source refs.
func Sources(sources []*mcfgv1.MachineConfig) []corev1.ObjectReference {
	out := make([]corev1.ObjectReference, 0, len(sources))
	for _, mc := range sources {
		out = append(out, corev1.ObjectReference{APIVersion: "machineconfiguration.openshift.io/v1", Kind: "MachineConfig", Name: mc.Name})
	}
	return out
}

// BaseConfigs are the MachineConfigs the MCO's template controller writes for
// a role at a release: 00-<role> (OS image), 01-<role>-kubelet and
// 01-<role>-container-runtime. A new release changes only 00-<role>, so the
// render controller produces exactly one new rendered config per pool.
func BaseConfigs(role, releaseVersion string) []*mcfgv1.MachineConfig {
	digest := md5.Sum([]byte("rhcos-" + releaseVersion)) //nolint:gosec
	osImage := "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:" + hex.EncodeToString(digest[:]) + hex.EncodeToString(digest[:])
	mk := func(name string, spec mcfgv1.MachineConfigSpec) *mcfgv1.MachineConfig {
		if spec.KernelArguments == nil {
			spec.KernelArguments = []string{}
		}
		if spec.Extensions == nil {
			spec.Extensions = []string{}
		}
		content := map[string]any{"ignition": map[string]string{"version": "3.5.0"}, "source": name}
		if spec.OSImageURL != "" {
			content["release"] = releaseVersion
		}
		raw, _ := json.Marshal(content)
		spec.Config = runtime.RawExtension{Raw: raw}
		ann := map[string]string{GeneratedByVersionAnnotation: ControllerVersion}
		if spec.OSImageURL != "" {
			ann[ReleaseVersionAnnotation] = releaseVersion
		}
		return &mcfgv1.MachineConfig{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{RoleLabel: role}, Annotations: ann},
			Spec:       spec,
		}
	}
	return []*mcfgv1.MachineConfig{
		mk("00-"+role, mcfgv1.MachineConfigSpec{OSImageURL: osImage}),
		mk("01-"+role+"-container-runtime", mcfgv1.MachineConfigSpec{}),
		mk("01-"+role+"-kubelet", mcfgv1.MachineConfigSpec{}),
	}
}

// UserConfigs are installer-created configs that do not change on update.
func UserConfigs(role string) []*mcfgv1.MachineConfig {
	raw, _ := json.Marshal(map[string]any{"ignition": map[string]string{"version": "3.5.0"}, "passwd": map[string]any{"users": []map[string]any{{"name": "core"}}}})
	return []*mcfgv1.MachineConfig{{
		ObjectMeta: metav1.ObjectMeta{Name: "99-" + role + "-ssh", Labels: map[string]string{RoleLabel: role}},
		Spec:       mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: raw}, KernelArguments: []string{}, Extensions: []string{}},
	}}
}
