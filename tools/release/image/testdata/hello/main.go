// Command hello stands in for a real binary where a test needs one that
// builds in seconds for every platform.
package main

import (
	"fmt"
	"os"
)

var version = "dev"

func main() {
	if len(os.Args) > 1 && os.Args[1] == "--version" {
		fmt.Println("hello", version)
	}
}
