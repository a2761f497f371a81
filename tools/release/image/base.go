package image

import (
	"archive/tar"
	"bytes"
	"encoding/pem"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"time"

	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// The non-root identity every image runs as, the same number distroless and
// most operator images use, so cluster policies that pin it keep working.
const (
	NonRootUID  = 65532
	NonRootName = "nonroot"
	NonRootHome = "/home/nonroot"
	// CABundlePath is where Go's crypto/x509 (and most TLS stacks) look on
	// Linux first.
	CABundlePath = "/etc/ssl/certs/ca-certificates.crt"
	// BinDir holds the image's one binary.
	BinDir = "/usr/local/bin"
)

// File is one entry of a layer: a regular file when Dir is false.
type File struct {
	Path string // absolute, slash-separated
	Mode int64  // permission bits (and sticky bit)
	UID  int
	GID  int
	Dir  bool
	Data []byte
}

// BaseFiles are the files of the base layer: what a static Go binary needs
// from an operating system and nothing more — the users and groups files with
// root and nonroot (so the user name resolves, and tools that look a user up
// find it), the CA bundle, a home for nonroot and a writable /tmp. No shell,
// no package manager, no libc.
func BaseFiles() ([]File, error) {
	ca, err := CABundle()
	if err != nil {
		return nil, err
	}
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\n%[1]s:x:%[2]d:%[2]d:%[1]s:%[3]s:/sbin/nologin\n",
		NonRootName, NonRootUID, NonRootHome)
	group := fmt.Sprintf("root:x:0:\n%[1]s:x:%[2]d:\n", NonRootName, NonRootUID)
	return []File{
		{Path: "/etc", Mode: 0o755, Dir: true},
		{Path: "/etc/group", Mode: 0o644, Data: []byte(group)},
		{Path: "/etc/passwd", Mode: 0o644, Data: []byte(passwd)},
		{Path: "/etc/ssl", Mode: 0o755, Dir: true},
		{Path: "/etc/ssl/certs", Mode: 0o755, Dir: true},
		{Path: CABundlePath, Mode: 0o644, Data: ca},
		{Path: "/home", Mode: 0o755, Dir: true},
		{Path: NonRootHome, Mode: 0o700, UID: NonRootUID, GID: NonRootUID, Dir: true},
		{Path: "/root", Mode: 0o700, Dir: true},
		{Path: "/tmp", Mode: 0o1777, Dir: true},
		{Path: "/usr", Mode: 0o755, Dir: true},
		{Path: "/usr/local", Mode: 0o755, Dir: true},
		{Path: BinDir, Mode: 0o755, Dir: true},
	}, nil
}

// CABundle is the Mozilla (NSS) root store as a PEM file, from the pinned
// golang.org/x/crypto/x509roots/fallback module rather than from the build
// machine: the same go.sum gives the same bytes on every machine, which a
// reproducible image needs. Roots that NSS constrains (distrust after a
// date) are left out: a PEM bundle cannot carry the constraint, and trusting
// them without it would be wider than NSS.
func CABundle() ([]byte, error) {
	var buf bytes.Buffer
	for root := range bundle.Roots() {
		if root.Constraint != nil {
			continue
		}
		if err := pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: root.Certificate}); err != nil {
			return nil, err
		}
	}
	if buf.Len() == 0 {
		return nil, fmt.Errorf("the CA bundle module has no roots")
	}
	return buf.Bytes(), nil
}

// Tar writes files as a tar stream with every timestamp set to mtime, owner
// names empty and entries sorted by path, so the same files give the same
// bytes: the layer digest depends only on the content. Parent directories
// must be listed explicitly.
func Tar(files []File, mtime time.Time) ([]byte, error) {
	sorted := append([]File(nil), files...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	seen := map[string]bool{"/": true}
	for _, f := range sorted {
		p := path.Clean(f.Path)
		if !path.IsAbs(p) || p != f.Path {
			return nil, fmt.Errorf("layer path %q is not clean and absolute", f.Path)
		}
		if !seen[path.Dir(p)] {
			return nil, fmt.Errorf("layer path %q: parent directory not in the layer", p)
		}
		seen[p] = true
		hdr := &tar.Header{
			Name:    p[1:],
			Mode:    f.Mode,
			Uid:     f.UID,
			Gid:     f.GID,
			ModTime: mtime.UTC(),
			Format:  tar.FormatPAX,
		}
		if f.Dir {
			hdr.Typeflag, hdr.Name = tar.TypeDir, hdr.Name+"/"
		} else {
			hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(f.Data))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if !f.Dir {
			if _, err := tw.Write(f.Data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteRootFS writes files into dir as a filesystem tree (for the
// Containerfile, which copies it into a scratch image). Owners are applied
// when running as root, as in a container build.
func WriteRootFS(dir string, files []File) error {
	for _, f := range files {
		target := filepath.Join(dir, filepath.FromSlash(f.Path))
		mode := os.FileMode(f.Mode & 0o777)
		if f.Mode&0o1000 != 0 {
			mode |= os.ModeSticky
		}
		if f.Dir {
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		} else if err := os.WriteFile(target, f.Data, 0o644); err != nil {
			return err
		}
		if err := os.Chmod(target, mode); err != nil {
			return err
		}
		if os.Geteuid() == 0 {
			if err := os.Lchown(target, f.UID, f.GID); err != nil {
				return err
			}
		}
	}
	return nil
}
