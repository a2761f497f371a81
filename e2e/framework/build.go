package framework

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/upshift-io/upshift/libs/testenv"
)

// BuildBinaries builds the given main packages of the workspace into dir and
// returns their paths by binary name. The test runs the binaries exactly as
// they ship, each in its own process.
func BuildBinaries(dir string, pkgs ...string) (map[string]string, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	args := append([]string{"build", "-o", dir + string(os.PathSeparator)}, pkgs...)
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build %s: %w\n%s", strings.Join(pkgs, " "), err, out)
	}
	bins := map[string]string{}
	for _, p := range pkgs {
		name := filepath.Base(p)
		bins[name] = filepath.Join(dir, name)
	}
	return bins, nil
}
