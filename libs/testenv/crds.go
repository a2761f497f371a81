package testenv

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/upshift-io/upshift/api/crds"
)

// CRDs returns every CRD a test cluster needs: the OpenShift and ARO ones
// the components read and Upshift's own, as embedded in the api module.
func CRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	return embeddedCRDs(crds.OpenShiftDir, crds.ARODir, crds.UpshiftDir)
}

func embeddedCRDs(dirs ...string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, dir := range dirs {
		files, err := crds.Files(dir)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			crd, err := readCRD(crds.FS, f)
			if err != nil {
				return nil, err
			}
			out = append(out, crd)
		}
	}
	return out, nil
}

func loadCRDs(upshift bool, extraDirs []string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	dirs := []string{crds.OpenShiftDir, crds.ARODir}
	if upshift {
		dirs = append(dirs, crds.UpshiftDir)
	}
	out, err := embeddedCRDs(dirs...)
	if err != nil {
		return nil, err
	}
	for _, dir := range extraDirs {
		matches, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
		if err != nil {
			return nil, err
		}
		if len(matches) == 0 {
			return nil, fmt.Errorf("no CRD manifests (*.yaml) in %s", dir)
		}
		for _, m := range matches {
			crd, err := readCRD(os.DirFS(filepath.Dir(m)), filepath.Base(m))
			if err != nil {
				return nil, err
			}
			out = append(out, crd)
		}
	}
	return out, nil
}

func readCRD(fsys fs.FS, name string) (*apiextensionsv1.CustomResourceDefinition, error) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(b, crd); err != nil {
		return nil, fmt.Errorf("reading CRD %s: %w", name, err)
	}
	if crd.Kind != "CustomResourceDefinition" {
		return nil, fmt.Errorf("reading CRD %s: kind is %q, want CustomResourceDefinition", name, crd.Kind)
	}
	return crd, nil
}
