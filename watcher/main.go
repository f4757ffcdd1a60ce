// Command vigil-watch is a placeholder until its real main lands.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	flag.Usage = func() { fmt.Fprintf(os.Stderr, "usage: vigil-watch [flags]\n"); flag.PrintDefaults() }
	flag.Parse()
}
