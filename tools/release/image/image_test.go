package image

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/x509"
	"debug/elf"
	"encoding/pem"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

var testMeta = Meta{
	Source:   "https://github.com/upshift-io/upshift",
	Version:  "v9.8.7-test",
	Revision: "0123456789abcdef0123456789abcdef01234567",
	Licenses: "Apache-2.0",
	Created:  time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC),
}

func TestTarIsDeterministicAndSorted(t *testing.T) {
	files := []File{
		{Path: "/b", Mode: 0o755, Dir: true},
		{Path: "/b/f", Mode: 0o600, UID: 7, GID: 8, Data: []byte("x")},
		{Path: "/a", Mode: 0o644, Data: []byte("y")},
	}
	one, err := Tar(files, testMeta.Created)
	if err != nil {
		t.Fatal(err)
	}
	// The same files in another order give the same bytes.
	two, err := Tar([]File{files[2], files[1], files[0]}, testMeta.Created)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(one, two) {
		t.Fatal("the same files in another order gave another tar")
	}
	tr := tar.NewReader(bytes.NewReader(one))
	var names []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if !h.ModTime.Equal(testMeta.Created) {
			t.Errorf("%s: mtime %s, want %s", h.Name, h.ModTime, testMeta.Created)
		}
		if h.Name == "b/f" && (h.Uid != 7 || h.Gid != 8 || h.Mode != 0o600) {
			t.Errorf("b/f: uid %d gid %d mode %o", h.Uid, h.Gid, h.Mode)
		}
	}
	if got := strings.Join(names, ","); got != "a,b/,b/f" {
		t.Errorf("entries %s, want a,b/,b/f", got)
	}
	if _, err := Tar([]File{{Path: "/x/y", Data: nil}}, testMeta.Created); err == nil {
		t.Error("a file whose directory is missing was accepted")
	}
	if _, err := Tar([]File{{Path: "rel"}}, testMeta.Created); err == nil {
		t.Error("a relative path was accepted")
	}
}

func TestBaseFiles(t *testing.T) {
	files, err := BaseFiles()
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]File{}
	for _, f := range files {
		byPath[f.Path] = f
	}
	if got := string(byPath["/etc/passwd"].Data); !strings.Contains(got, "\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n") {
		t.Errorf("/etc/passwd has no nonroot 65532:\n%s", got)
	}
	if got := string(byPath["/etc/group"].Data); !strings.Contains(got, "\nnonroot:x:65532:\n") {
		t.Errorf("/etc/group has no nonroot 65532:\n%s", got)
	}
	if h := byPath[NonRootHome]; h.UID != NonRootUID || h.GID != NonRootUID {
		t.Errorf("%s is owned by %d:%d, want nonroot", NonRootHome, h.UID, h.GID)
	}
	if m := byPath["/tmp"].Mode; m != 0o1777 {
		t.Errorf("/tmp mode %o, want 1777", m)
	}
	for _, shell := range []string{"/bin/sh", "/bin/bash", "/bin", "/usr/bin/sh"} {
		if _, ok := byPath[shell]; ok {
			t.Errorf("the base has %s", shell)
		}
	}
	// The CA bundle is PEM that crypto/x509 reads, with the roots a public
	// TLS endpoint chains to.
	pool := x509.NewCertPool()
	ca := byPath[CABundlePath].Data
	if !pool.AppendCertsFromPEM(ca) {
		t.Fatal("the CA bundle does not parse")
	}
	n := 0
	for rest := ca; ; n++ {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		cert, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		if !cert.IsCA {
			t.Errorf("%s is not a CA", cert.Subject)
		}
	}
	if n < 100 {
		t.Errorf("the CA bundle has %d roots, want the NSS store (over 100)", n)
	}
}

func TestDescription(t *testing.T) {
	got := Description("Command update-status-controller publishes where an update\nstands. It also...")
	if want := "update-status-controller publishes where an update stands."; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestIndexCoversEveryPlatform builds a small program for both release
// platforms (seconds, where a real binary takes minutes cold for arm64) and
// checks the index: one image per platform, each config naming it, each
// binary compiled for it.
func TestIndexCoversEveryPlatform(t *testing.T) {
	plats := []Platform{{"linux", "amd64"}, {"linux", "arm64"}}
	root, err := filepath.Abs("testdata/hello")
	if err != nil {
		t.Fatal(err)
	}
	b := Binary{Name: "hello", Package: ".", Description: "hello stands in."}
	out := t.TempDir()
	res, err := Build(context.Background(), BuildOptions{Root: root, Binaries: []Binary{b}, Platforms: plats, Meta: testMeta, OutDir: out, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	idx, err := ReadLayout(res[0].Dir)
	if err != nil {
		t.Fatal(err)
	}
	checkIndex(t, idx, b, plats)
	wantMachine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	im, _ := idx.IndexManifest()
	for _, d := range im.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		rootfs := t.TempDir()
		if err := Unpack(img, rootfs); err != nil {
			t.Fatal(err)
		}
		f, err := elf.Open(filepath.Join(rootfs, BinDir, "hello"))
		if err != nil {
			t.Fatal(err)
		}
		if f.Machine != wantMachine[d.Platform.Architecture] {
			t.Errorf("%s image holds a %s binary", d.Platform.Architecture, f.Machine)
		}
		if f.Section(".interp") != nil {
			t.Errorf("%s binary is dynamically linked", d.Platform.Architecture)
		}
		f.Close()
	}
}

// TestRealImageRunsAndRebuildsIdentically builds the kubectl-upshift image
// for this machine's architecture twice (compiling twice), checks both give
// the same digest, unpacks it, checks its config and runs `--version` from
// the unpacked root filesystem.
func TestRealImageRunsAndRebuildsIdentically(t *testing.T) {
	if goruntime.GOOS != "linux" {
		t.Skip("runs a linux binary")
	}
	root := repoRoot(t)
	ctx := context.Background()
	bins, err := Discover(ctx, root, []string{"kubectl-upshift"})
	if err != nil {
		t.Fatal(err)
	}
	host := []Platform{{"linux", goruntime.GOARCH}}
	build := func() Result {
		start := time.Now()
		res, err := Build(ctx, BuildOptions{Root: root, Binaries: bins, Platforms: host, Meta: testMeta, OutDir: t.TempDir(), WorkDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("built %s in %s: %s", bins[0].Name, time.Since(start).Round(time.Millisecond), res[0].Digest)
		return res[0]
	}
	first, second := build(), build()
	if first.Digest != second.Digest {
		t.Fatalf("two builds of one source differ: %s and %s", first.Digest, second.Digest)
	}
	a, _ := os.ReadFile(filepath.Join(first.Dir, "index.json"))
	b, _ := os.ReadFile(filepath.Join(second.Dir, "index.json"))
	if !bytes.Equal(a, b) {
		t.Fatalf("layouts' index.json differ:\n%s\n%s", a, b)
	}

	idx, err := ReadLayout(first.Dir)
	if err != nil {
		t.Fatal(err)
	}
	checkIndex(t, idx, bins[0], host)
	im, _ := idx.IndexManifest()
	img, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	rootfs := t.TempDir()
	if err := Unpack(img, rootfs); err != nil {
		t.Fatal(err)
	}
	for _, shell := range []string{"bin/sh", "bin/bash", "usr/bin/sh"} {
		if _, err := os.Stat(filepath.Join(rootfs, shell)); err == nil {
			t.Errorf("the image has a shell: /%s", shell)
		}
	}
	passwd, err := os.ReadFile(filepath.Join(rootfs, "etc/passwd"))
	if err != nil || !strings.Contains(string(passwd), "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd: %v\n%s", err, passwd)
	}
	cfg, _ := img.ConfigFile()
	entry := filepath.Join(rootfs, cfg.Config.Entrypoint[0])
	cmd := exec.Command(entry, "--version")
	// Only what the image's config sets, none of the test's environment.
	cmd.Env, cmd.Dir = cfg.Config.Env, rootfs
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s --version: %v\n%s", cfg.Config.Entrypoint[0], err, out)
	}
	if want := "kubectl-upshift " + testMeta.Version + " "; !strings.HasPrefix(string(out), want) {
		t.Errorf("--version printed %q, want it to start with %q", out, want)
	}
}

// checkIndex checks what every image must hold: OCI media types, one
// manifest per platform, a non-root user, the binary as entrypoint and the
// labels, on the index, each manifest and each config.
func checkIndex(t *testing.T, idx v1.ImageIndex, b Binary, plats []Platform) {
	t.Helper()
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if im.MediaType != types.OCIImageIndex {
		t.Errorf("index media type %s", im.MediaType)
	}
	wantLabels := map[string]string{
		AnnotationSource: testMeta.Source, AnnotationVersion: testMeta.Version,
		AnnotationRevision: testMeta.Revision, AnnotationLicenses: testMeta.Licenses,
		AnnotationTitle: b.Name, AnnotationCreated: "2026-11-22T12:00:00Z",
	}
	checkLabels(t, "index annotations", im.Annotations, wantLabels)
	if len(im.Manifests) != len(plats) {
		t.Fatalf("index has %d manifests, want %d", len(im.Manifests), len(plats))
	}
	for i, d := range im.Manifests {
		p := plats[i]
		if d.Platform == nil || d.Platform.OS != p.OS || d.Platform.Architecture != p.Arch {
			t.Errorf("manifest %d: platform %v, want %s", i, d.Platform, p)
		}
		if d.ArtifactType != "" || d.MediaType != types.OCIManifestSchema1 {
			t.Errorf("manifest %d: artifactType %q, media type %s: want an image manifest", i, d.ArtifactType, d.MediaType)
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		m, _ := img.Manifest()
		if m.MediaType != types.OCIManifestSchema1 || m.Config.MediaType != types.OCIConfigJSON {
			t.Errorf("%s: media types %s, %s", p, m.MediaType, m.Config.MediaType)
		}
		checkLabels(t, p.String()+" manifest annotations", m.Annotations, wantLabels)
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.OS != p.OS || cfg.Architecture != p.Arch {
			t.Errorf("%s: config says %s/%s", p, cfg.OS, cfg.Architecture)
		}
		if cfg.Config.User != "65532:65532" {
			t.Errorf("%s: user %q, want 65532:65532", p, cfg.Config.User)
		}
		if want := "/usr/local/bin/" + b.Name; len(cfg.Config.Entrypoint) != 1 || cfg.Config.Entrypoint[0] != want {
			t.Errorf("%s: entrypoint %q, want [%s]", p, cfg.Config.Entrypoint, want)
		}
		if len(cfg.Config.Cmd) != 0 {
			t.Errorf("%s: cmd %q, want none", p, cfg.Config.Cmd)
		}
		if !cfg.Created.Time.Equal(testMeta.Created) {
			t.Errorf("%s: created %s, want %s", p, cfg.Created.Time, testMeta.Created)
		}
		checkLabels(t, p.String()+" config labels", cfg.Config.Labels, wantLabels)
	}
}

func checkLabels(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s=%q, want %q", what, k, got[k], v)
		}
	}
}

func repoRoot(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.work above the test's folder")
		}
		dir = parent
	}
}
