package mustgather

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
)

// WriteTarGz packs dir into the gzip-compressed tar file out, every entry
// under one top folder named as dir is, so that unpacking it anywhere gives
// back the folder and not a spray of files.
func WriteTarGz(dir, out string) (retErr error) {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer func() {
		if err := f.Close(); retErr == nil {
			retErr = err
		}
		if retErr != nil {
			_ = os.Remove(out)
		}
	}()
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	top := filepath.Base(filepath.Clean(dir))
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if !info.Mode().IsRegular() && !info.IsDir() {
			return nil // the gatherer writes only folders and files
		}
		hdr, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		hdr.Name = path.Join(top, filepath.ToSlash(rel))
		if info.IsDir() {
			hdr.Name += "/"
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if info.IsDir() {
			return nil
		}
		src, err := os.Open(p)
		if err != nil {
			return err
		}
		_, err = src.WriteTo(tw)
		return errors.Join(err, src.Close())
	})
	return errors.Join(err, tw.Close(), gz.Close())
}
