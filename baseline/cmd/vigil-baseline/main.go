// Command vigil-baseline reads the JSON reports of many nodes and proposes
// per-model thresholds from the fleet's own measurements (docs/baseline.md);
// `vigil-baseline fleet` follows each GPU, NPU and HCA port by its stable
// identity through the reports: its failures, remedies and drains, the
// lemons, and how often each check's drains held up (docs/operations.md).
package main

import (
	"os"

	"github.com/vigil-hpc/vigil/baseline"
)

func main() {
	os.Exit(baseline.Command(os.Args[1:], os.Stdout, os.Stderr))
}
