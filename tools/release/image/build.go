// Package image builds Upshift's container images from Go alone: a static
// binary per platform on a minimal base layer this package writes itself,
// assembled with go-containerregistry into one OCI image index per binary
// and written as an OCI image layout. No container daemon, no base image from
// a registry, and every input (binary, files, timestamps, annotations) fixed
// by the source tree, so building twice gives the same digest.
package image

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Annotation and label keys (OCI image spec, "Pre-Defined Annotation Keys").
const (
	AnnotationSource      = "org.opencontainers.image.source"
	AnnotationVersion     = "org.opencontainers.image.version"
	AnnotationRevision    = "org.opencontainers.image.revision"
	AnnotationLicenses    = "org.opencontainers.image.licenses"
	AnnotationTitle       = "org.opencontainers.image.title"
	AnnotationDescription = "org.opencontainers.image.description"
	AnnotationCreated     = "org.opencontainers.image.created"
	// AnnotationRefName names the index inside an OCI layout: the version.
	AnnotationRefName = "org.opencontainers.image.ref.name"
)

// VersionVar is the variable -ldflags -X sets so --version prints the release.
const VersionVar = "github.com/upshift-io/upshift/libs/buildinfo.version"

// Meta describes a build: the same for every binary of one release.
type Meta struct {
	Source   string // repository URL
	Version  string
	Revision string // commit
	Licenses string // SPDX expression
	// Created stamps every timestamp (layer files, config, history): the
	// commit time or SOURCE_DATE_EPOCH, never the clock.
	Created time.Time
}

// Platform is a linux/<arch> target.
type Platform struct{ OS, Arch string }

func (p Platform) String() string { return p.OS + "/" + p.Arch }

// ParsePlatform reads "linux/arm64".
func ParsePlatform(s string) (Platform, error) {
	osName, arch, ok := strings.Cut(s, "/")
	if !ok || osName == "" || arch == "" {
		return Platform{}, fmt.Errorf("platform %q: want <os>/<arch>", s)
	}
	return Platform{OS: osName, Arch: arch}, nil
}

// Binary is one image's program.
type Binary struct {
	Name        string // binary and image name
	Package     string // Go package to build, e.g. ./cmd/<name>
	Description string
}

// GoBuild builds pkg (from the workspace at root) as a static, trimmed
// binary for platform into out. The flags are the ones that make Go builds
// reproducible: no cgo, no paths of the build machine, no VCS stamp (the
// version comes in through -X), an empty build ID.
func GoBuild(ctx context.Context, root, pkg string, p Platform, version, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false",
		"-ldflags", fmt.Sprintf("-s -w -buildid= -X %s=%s", VersionVar, version),
		"-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(),
		"CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Arch, goWork(root),
		// No GOARM64/GOAMD64 drift from the environment: the baseline of
		// each architecture, so the image runs on every machine of it.
		"GOAMD64=v1", "GOARM64=v8.0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s for %s: %w\n%s", pkg, p, err, stderr.String())
	}
	return nil
}

// goWork points go at root's workspace: the builder itself runs outside it
// (GOWORK=off), the binaries build inside it. A root without go.work is a
// plain module.
func goWork(root string) string {
	if _, err := os.Stat(filepath.Join(root, "go.work")); err == nil {
		return "GOWORK=" + filepath.Join(root, "go.work")
	}
	return "GOWORK=off"
}

// Labels are the image config's labels and the manifests' annotations.
func Labels(b Binary, m Meta) map[string]string {
	l := map[string]string{
		AnnotationSource:   m.Source,
		AnnotationVersion:  m.Version,
		AnnotationRevision: m.Revision,
		AnnotationLicenses: m.Licenses,
		AnnotationTitle:    b.Name,
		AnnotationCreated:  m.Created.UTC().Format(time.RFC3339),
	}
	if b.Description != "" {
		l[AnnotationDescription] = b.Description
	}
	return l
}

// Image assembles one platform's image: the base layer, then a layer with
// the binary, run as nonroot with the binary as entrypoint.
func Image(b Binary, binary []byte, p Platform, m Meta) (v1.Image, error) {
	base, err := BaseFiles()
	if err != nil {
		return nil, err
	}
	baseLayer, err := layer(base, m.Created)
	if err != nil {
		return nil, err
	}
	binLayer, err := layer([]File{
		{Path: "/usr", Mode: 0o755, Dir: true},
		{Path: "/usr/local", Mode: 0o755, Dir: true},
		{Path: BinDir, Mode: 0o755, Dir: true},
		{Path: BinDir + "/" + b.Name, Mode: 0o755, Data: binary},
	}, m.Created)
	if err != nil {
		return nil, err
	}
	created := v1.Time{Time: m.Created.UTC()}
	img, err := mutate.Append(empty.Image,
		mutate.Addendum{Layer: baseLayer, History: v1.History{Created: created, CreatedBy: "upshift-release: base (passwd, group, CA bundle)", Comment: "static base"}},
		mutate.Addendum{Layer: binLayer, History: v1.History{Created: created, CreatedBy: "upshift-release: " + b.Package}},
	)
	if err != nil {
		return nil, err
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = p.OS, p.Arch
	cfg.Created = created
	cfg.Author = ""
	cfg.Config = v1.Config{
		User:       fmt.Sprintf("%d:%d", NonRootUID, NonRootUID),
		Entrypoint: []string{BinDir + "/" + b.Name},
		WorkingDir: NonRootHome,
		Env: []string{
			"PATH=" + BinDir,
			"HOME=" + NonRootHome,
			"SSL_CERT_FILE=" + CABundlePath,
		},
		Labels: Labels(b, m),
	}
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, err
	}
	return mutate.Annotations(img, Labels(b, m)).(v1.Image), nil
}

// layer is a gzip-compressed OCI layer of files. The compression is
// deterministic (Go's gzip, no name or time in its header).
func layer(files []File, mtime time.Time) (v1.Layer, error) {
	raw, err := Tar(files, mtime)
	if err != nil {
		return nil, err
	}
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(raw)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
}

// Index is the multi-platform image of one binary: one image per platform,
// built from the binaries in binaries (by platform).
func Index(b Binary, binaries map[Platform][]byte, platforms []Platform, m Meta) (v1.ImageIndex, error) {
	var adds []mutate.IndexAddendum
	for _, p := range platforms {
		data, ok := binaries[p]
		if !ok {
			return nil, fmt.Errorf("%s: no binary for %s", b.Name, p)
		}
		img, err := Image(b, data, p, m)
		if err != nil {
			return nil, fmt.Errorf("%s for %s: %w", b.Name, p, err)
		}
		adds = append(adds, mutate.IndexAddendum{
			Add:        imageNotArtifact{img},
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: p.OS, Architecture: p.Arch}},
		})
	}
	idx := mutate.IndexMediaType(mutate.AppendManifests(empty.Index, adds...), types.OCIImageIndex)
	return mutate.Annotations(idx, Labels(b, m)).(v1.ImageIndex), nil
}

// imageNotArtifact keeps go-containerregistry from setting the index
// descriptor's artifactType to the config media type: OCI 1.1 reserves
// artifactType for artifacts, and docker's and buildx's indexes of images
// carry none, which some clients rely on to tell images from artifacts.
type imageNotArtifact struct{ v1.Image }

func (imageNotArtifact) ArtifactType() (string, error) { return "", nil }

// WriteLayout writes idx as the only entry of a fresh OCI image layout in
// dir (replacing what was there), named by the version.
func WriteLayout(dir string, idx v1.ImageIndex, version string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	return p.AppendIndex(idx, layout.WithAnnotations(map[string]string{AnnotationRefName: version}))
}

// ReadLayout returns the one index a layout written by WriteLayout holds.
func ReadLayout(dir string) (v1.ImageIndex, error) {
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, err
	}
	im, err := top.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(im.Manifests) != 1 {
		return nil, fmt.Errorf("layout %s holds %d entries, want 1", dir, len(im.Manifests))
	}
	return top.ImageIndex(im.Manifests[0].Digest)
}

// BuildOptions is one `images` run.
type BuildOptions struct {
	Root      string // the repository (holding go.work)
	Binaries  []Binary
	Platforms []Platform
	Meta      Meta
	// OutDir receives <OutDir>/<binary>/ (an OCI layout) per binary, and
	// WorkDir the compiled binaries.
	OutDir, WorkDir string
}

// Result is one binary's built index.
type Result struct {
	Binary Binary
	Dir    string
	Digest v1.Hash
}

// Build compiles every binary for every platform and writes one layout each.
func Build(ctx context.Context, o BuildOptions) ([]Result, error) {
	var out []Result
	for _, b := range o.Binaries {
		bins := map[Platform][]byte{}
		for _, p := range o.Platforms {
			path := filepath.Join(o.WorkDir, p.OS+"_"+p.Arch, b.Name)
			if err := GoBuild(ctx, o.Root, b.Package, p, o.Meta.Version, path); err != nil {
				return nil, err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return nil, err
			}
			bins[p] = data
		}
		idx, err := Index(b, bins, o.Platforms, o.Meta)
		if err != nil {
			return nil, err
		}
		dir := filepath.Join(o.OutDir, b.Name)
		if err := WriteLayout(dir, idx, o.Meta.Version); err != nil {
			return nil, err
		}
		d, err := idx.Digest()
		if err != nil {
			return nil, err
		}
		out = append(out, Result{Binary: b, Dir: dir, Digest: d})
	}
	return out, nil
}

// Reference is where the image of binary goes when pushed to registry (a
// registry and path, e.g. ghcr.io/upshift-io) with tag: <registry>/<binary>:<tag>.
// The charts name their images the same way (global.imageRegistry, and
// the tag from appVersion), which tools/release/chart's test checks.
func Reference(registry, binary, tag string) (name.Tag, error) {
	return name.NewTag(strings.TrimSuffix(registry, "/") + "/" + binary + ":" + tag)
}
