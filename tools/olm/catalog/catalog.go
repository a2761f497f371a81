// Package catalog makes the file-based catalog (FBC) OLM reads the bundles
// from: per package one olm.package, one olm.channel per channel (its
// entries are the upgrade graph) and one olm.bundle per bundle, with the
// properties OLM resolves dependencies on. It is built from the same Bundle
// values the bundle folders are written from.
package catalog

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"

	"github.com/upshift-io/upshift/tools/olm/bundle"
)

// Build returns the catalog of the bundles; image gives each bundle's image
// reference.
func Build(bundles []*bundle.Bundle, image func(*bundle.Bundle) string) declcfg.DeclarativeConfig {
	var cfg declcfg.DeclarativeConfig
	for _, b := range bundles {
		m := b.Meta
		cfg.Packages = append(cfg.Packages, declcfg.Package{
			Schema:         declcfg.SchemaPackage,
			Name:           m.Package,
			DefaultChannel: m.DefaultChannel,
			Description:    m.Description,
		})
		// One bundle per package so far: the entry skips every earlier
		// version (olm.skipRange), so any install upgrades straight to it.
		for _, ch := range m.Channels {
			cfg.Channels = append(cfg.Channels, declcfg.Channel{
				Schema:  declcfg.SchemaChannel,
				Name:    ch,
				Package: m.Package,
				Entries: []declcfg.ChannelEntry{{Name: m.CSVName(), SkipRange: m.SkipRange()}},
			})
		}
		props := []property.Property{property.MustBuildPackage(m.Package, m.Version)}
		for _, crd := range b.CSV.Spec.CustomResourceDefinitions.Owned {
			props = append(props, property.MustBuildGVK(group(crd.Name), crd.Version, crd.Kind))
		}
		for _, crd := range b.CSV.Spec.CustomResourceDefinitions.Required {
			props = append(props, property.MustBuildGVKRequired(group(crd.Name), crd.Version, crd.Kind))
		}
		props = append(props, property.MustBuildCSVMetadata(*b.CSV))

		img := image(b)
		// The bundle image itself is a related image with no name, as opm
		// renders it; then every image the CSV runs.
		related := []declcfg.RelatedImage{{Image: img}}
		for _, r := range b.CSV.Spec.RelatedImages {
			related = append(related, declcfg.RelatedImage{Name: r.Name, Image: r.Image})
		}
		cfg.Bundles = append(cfg.Bundles, declcfg.Bundle{
			Schema:        declcfg.SchemaBundle,
			Name:          m.CSVName(),
			Package:       m.Package,
			Image:         img,
			Properties:    props,
			RelatedImages: related,
		})
	}
	return cfg
}

// Validate checks the catalog as opm does when it serves one: every channel
// entry a bundle of the package, one head per channel, the default channel
// present, well-formed properties.
func Validate(cfg declcfg.DeclarativeConfig) error {
	m, err := declcfg.ConvertToModel(cfg)
	if err != nil {
		return err
	}
	return m.Validate()
}

// Write writes one folder per package under dir, each with catalog.yaml.
func Write(cfg declcfg.DeclarativeConfig, dir string) error {
	for _, p := range cfg.Packages {
		var one declcfg.DeclarativeConfig
		one.Packages = []declcfg.Package{p}
		for _, c := range cfg.Channels {
			if c.Package == p.Name {
				one.Channels = append(one.Channels, c)
			}
		}
		for _, b := range cfg.Bundles {
			if b.Package == p.Name {
				one.Bundles = append(one.Bundles, b)
			}
		}
		var buf bytes.Buffer
		if err := declcfg.WriteYAML(one, &buf); err != nil {
			return fmt.Errorf("package %s: %w", p.Name, err)
		}
		if err := os.MkdirAll(filepath.Join(dir, p.Name), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, p.Name, "catalog.yaml"), buf.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// group is the API group of a CRD from its name, <plural>.<group>.
func group(crdName string) string {
	for i := 0; i < len(crdName); i++ {
		if crdName[i] == '.' {
			return crdName[i+1:]
		}
	}
	return ""
}
