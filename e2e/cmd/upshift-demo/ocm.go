package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/upshift-io/upshift/e2e/framework"
	"github.com/upshift-io/upshift/tools/ocmsim"
)

// printOCM prints what OCM has heard: the policy's states in order, and the
// service logs posted.
func printOCM(sim *ocmsim.Server, out io.Writer) {
	var states []string
	for _, s := range sim.StateHistory(framework.OCMClusterID, framework.OCMPolicyID) {
		states = append(states, s.Value)
	}
	fmt.Fprintf(out, "OCM upgrade policy %s: %s\n", framework.OCMPolicyID, strings.Join(states, " → "))
	for _, l := range sim.ServiceLogs() {
		fmt.Fprintf(out, "OCM service log: %s\n", l.Description())
	}
}
