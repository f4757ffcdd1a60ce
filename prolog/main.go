// Command vigil-prolog is a placeholder until its real main lands.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	flag.Usage = func() { fmt.Fprintf(os.Stderr, "usage: vigil-prolog [flags]\n"); flag.PrintDefaults() }
	flag.Parse()
}
