// Command upshift-release builds Upshift's release artefacts from Go alone:
//
//	upshift-release images    [flags] <binary>...   OCI image layouts under --out
//	upshift-release push      --registry R <layout>...  push them (go-containerregistry)
//	upshift-release changelog --version V           changelog section since the last tag
//	upshift-release checksums <dir>                 SHA256SUMS of the files in dir
//	upshift-release rootfs    <dir>                 the images' base files as a tree (Containerfile)
//	upshift-release stamp-charts --version V <dir>  set version and appVersion of every <dir>/*/Chart.yaml
//	upshift-release chart-version V                 the chart version of release V (make bundles)
//
// The Makefile's images, push and release targets call it; see docs/release.md.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/upshift-io/upshift/tools/release/changelog"
	"github.com/upshift-io/upshift/tools/release/chart"
	"github.com/upshift-io/upshift/tools/release/image"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: upshift-release images|push|changelog|checksums|rootfs|stamp-charts|chart-version [flags] [args]")
		os.Exit(2)
	}
	cmds := map[string]func(context.Context, []string) error{
		"images": images, "push": push, "changelog": changelogCmd, "checksums": checksums, "rootfs": rootfs,
		"stamp-charts": stampCharts, "chart-version": chartVersion,
	}
	run, ok := cmds[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "unknown command %q\n", os.Args[1])
		os.Exit(2)
	}
	if err := run(ctx, os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "upshift-release "+os.Args[1]+":", err)
		os.Exit(1)
	}
}

func images(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("images", flag.ExitOnError)
	root := fs.String("root", ".", "repository root (holding go.work)")
	out := fs.String("out", "dist/images", "one OCI image layout per binary goes to <out>/<binary>/")
	work := fs.String("work", "dist/build", "compiled binaries, per platform")
	platforms := fs.String("platforms", "linux/amd64,linux/arm64", "comma-separated <os>/<arch> list")
	version := fs.String("version", "dev", "version: image tag, label and --version output")
	revision := fs.String("revision", "", "commit the images are built from")
	source := fs.String("source", "https://github.com/upshift-io/upshift", "repository URL for the source label")
	licenses := fs.String("licenses", "Apache-2.0", "SPDX license expression for the licenses label")
	epoch := fs.String("source-date-epoch", os.Getenv("SOURCE_DATE_EPOCH"), "Unix time stamped on every file and in the config (default $SOURCE_DATE_EPOCH, else the commit time)")
	_ = fs.Parse(args)
	if fs.NArg() == 0 {
		return fmt.Errorf("name at least one binary under cmd/")
	}
	rootAbs, err := filepath.Abs(*root)
	if err != nil {
		return err
	}
	created, err := createdTime(ctx, rootAbs, *epoch)
	if err != nil {
		return err
	}
	var plats []image.Platform
	for _, s := range strings.Split(*platforms, ",") {
		p, err := image.ParsePlatform(strings.TrimSpace(s))
		if err != nil {
			return err
		}
		plats = append(plats, p)
	}
	bins, err := image.Discover(ctx, rootAbs, fs.Args())
	if err != nil {
		return err
	}
	start := time.Now()
	results, err := image.Build(ctx, image.BuildOptions{
		Root: rootAbs, Binaries: bins, Platforms: plats, OutDir: *out, WorkDir: *work,
		Meta: image.Meta{Source: *source, Version: *version, Revision: *revision, Licenses: *licenses, Created: created},
	})
	if err != nil {
		return err
	}
	for _, r := range results {
		fmt.Printf("%-28s %s  %s\n", r.Binary.Name, r.Digest, r.Dir)
	}
	fmt.Printf("built %d image(s) for %s in %s\n", len(results), *platforms, time.Since(start).Round(100*time.Millisecond))
	return nil
}

// createdTime is SOURCE_DATE_EPOCH when given, else the time of the commit
// checked out: a property of the source, so rebuilding it gives the same
// image.
func createdTime(ctx context.Context, root, epoch string) (time.Time, error) {
	if epoch == "" {
		out, err := exec.CommandContext(ctx, "git", "-C", root, "log", "-1", "--format=%ct").Output()
		if err != nil {
			return time.Time{}, fmt.Errorf("no SOURCE_DATE_EPOCH and no commit time (git log: %w)", err)
		}
		epoch = strings.TrimSpace(string(out))
	}
	sec, err := strconv.ParseInt(epoch, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("source date epoch %q: %w", epoch, err)
	}
	return time.Unix(sec, 0).UTC(), nil
}

func push(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("push", flag.ExitOnError)
	registry := fs.String("registry", "", "repository prefix, e.g. ghcr.io/upshift-io: <layout dir name> is appended")
	tag := fs.String("tag", "", "tag (default: the version the layout was built as)")
	_ = fs.Parse(args)
	if *registry == "" || fs.NArg() == 0 {
		return fmt.Errorf("usage: push --registry <prefix> <layout dir> [<layout dir>]")
	}
	for _, dir := range fs.Args() {
		idx, err := image.ReadLayout(dir)
		if err != nil {
			return err
		}
		t := *tag
		if t == "" {
			m, err := idx.IndexManifest()
			if err != nil {
				return err
			}
			t = m.Annotations[image.AnnotationVersion]
		}
		ref, err := image.Reference(*registry, filepath.Base(filepath.Clean(dir)), t)
		if err != nil {
			return err
		}
		// Credentials as docker and podman store them (~/.docker/config.json,
		// $REGISTRY_AUTH_FILE, credential helpers).
		if err := remote.WriteIndex(ref, idx, remote.WithAuthFromKeychain(authn.DefaultKeychain), remote.WithContext(ctx)); err != nil {
			return fmt.Errorf("pushing %s: %w", ref, err)
		}
		d, err := idx.Digest()
		if err != nil {
			return err
		}
		fmt.Printf("%s@%s\n", ref, d)
	}
	return nil
}

func changelogCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("changelog", flag.ExitOnError)
	version := fs.String("version", "", "version this section is for")
	root := fs.String("root", ".", "repository")
	_ = fs.Parse(args)
	if *version == "" {
		return fmt.Errorf("--version is required")
	}
	git := func(args ...string) (string, error) {
		out, err := exec.CommandContext(ctx, "git", append([]string{"-C", *root}, args...)...).Output()
		return strings.TrimSpace(string(out)), err
	}
	// The newest tag reachable from HEAD's parent, so tagging HEAD as the
	// release itself does not empty its own changelog.
	prev, err := git("describe", "--tags", "--abbrev=0", "HEAD^")
	if err != nil {
		prev = ""
	}
	rng := []string{"log", "--no-merges", "--format=%H%x09%s"}
	if prev != "" {
		rng = append(rng, prev+"..HEAD")
	} else {
		rng = append(rng, "HEAD")
	}
	log, err := git(rng...)
	if err != nil {
		return fmt.Errorf("git log: %w", err)
	}
	when, err := git("log", "-1", "--format=%ct")
	if err != nil {
		return err
	}
	sec, _ := strconv.ParseInt(when, 10, 64)
	fmt.Print(changelog.Section(*version, prev, time.Unix(sec, 0), changelog.ParseLog(log)))
	return nil
}

// checksums writes <dir>/SHA256SUMS in the format `sha256sum -c` reads.
func checksums(_ context.Context, args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("usage: checksums <dir>")
	}
	dir := args[0]
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var lines []string
	for _, e := range entries {
		if !e.Type().IsRegular() || e.Name() == "SHA256SUMS" {
			continue
		}
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		h := sha256.New()
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return err
		}
		lines = append(lines, hex.EncodeToString(h.Sum(nil))+"  "+e.Name())
	}
	sort.Strings(lines)
	return os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}

// rootfs writes the base layer's files into a folder, for image builds
// that are not ours (the Containerfile): the same passwd, group and CA
// bundle as `images` puts in its base layer.
func rootfs(_ context.Context, args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("usage: rootfs <dir>")
	}
	files, err := image.BaseFiles()
	if err != nil {
		return err
	}
	return image.WriteRootFS(args[0], files)
}

// stampCharts sets every chart's version and appVersion to the release
// (see package chart): run on the copy `make charts` packages, never on
// the repository's charts, whose values are placeholders.
func stampCharts(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("stamp-charts", flag.ExitOnError)
	version := fs.String("version", "", "release version, as the images were built (make images VERSION)")
	_ = fs.Parse(args)
	if *version == "" || fs.NArg() != 1 {
		return fmt.Errorf("usage: stamp-charts --version <version> <charts dir>")
	}
	names, err := chart.StampDir(fs.Arg(0), *version)
	if err != nil {
		return err
	}
	v, _ := chart.Version(*version)
	fmt.Printf("stamped %s: version %s, appVersion %s\n", strings.Join(names, ", "), v, *version)
	return nil
}

// chartVersion prints the chart version of a release version, the one
// stamp-charts writes, for what else is versioned like the charts (the OLM
// bundles).
func chartVersion(_ context.Context, args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("usage: chart-version <version>")
	}
	v, err := chart.Version(args[0])
	if err != nil {
		return err
	}
	fmt.Println(v)
	return nil
}
