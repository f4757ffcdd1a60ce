// Command vigil-baseline reads the JSON reports of many nodes and proposes
// per-model thresholds from the fleet's own measurements (docs/baseline.md).
package main

import (
	"os"

	"github.com/vigil-hpc/vigil/baseline"
)

func main() {
	os.Exit(baseline.Command(os.Args[1:], os.Stdout, os.Stderr))
}
