// Command chartdoc writes README.md of every chart under the folder it is
// given (charts/ by default), from the chart's own files; see package
// tools/chartdoc. `make generate` runs it.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/upshift-io/upshift/tools/chartdoc"
)

func main() {
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: chartdoc [charts-dir]")
	}
	flag.Parse()
	root := "charts"
	if flag.NArg() > 0 {
		root = flag.Arg(0)
	}
	if err := run(root); err != nil {
		fmt.Fprintln(os.Stderr, "chartdoc:", err)
		os.Exit(1)
	}
}

func run(root string) error {
	charts, err := filepath.Glob(filepath.Join(root, "*", "Chart.yaml"))
	if err != nil {
		return err
	}
	if len(charts) == 0 {
		return fmt.Errorf("no chart under %s", root)
	}
	var errs []error
	for _, c := range charts {
		dir := filepath.Dir(c)
		readme, err := chartdoc.Generate(dir)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, "README.md"), readme, 0o644)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
