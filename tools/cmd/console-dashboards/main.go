// Command console-dashboards writes the OpenShift console variant of every
// chart's Grafana dashboard: charts/<chart>/dashboards/<name>.json becomes
// charts/<chart>/dashboards/console/<name>.json (see package consoledash).
// `make generate` runs it from the repository's root.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/upshift-io/upshift/tools/consoledash"
)

func main() {
	root := flag.String("root", ".", "the repository's root")
	flag.Parse()
	written, err := consoledash.WriteAll(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "console-dashboards:", err)
		os.Exit(1)
	}
	for _, f := range written {
		fmt.Println(f)
	}
}
