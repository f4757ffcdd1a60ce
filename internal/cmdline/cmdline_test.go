package cmdline

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantErr    error
		stdout     string
		stderr     string
		wantNodes  int
		wantGiven  bool
		checkFails bool
	}{
		{name: "defaults", args: nil, wantNodes: 2},
		{name: "flag given", args: []string{"--nodes", "4"}, wantNodes: 4, wantGiven: true},
		{name: "help", args: []string{"--help"}, wantErr: flag.ErrHelp, stdout: "usage: vigil-test sub\n", wantNodes: 2},
		{name: "unknown flag", args: []string{"--bogus"}, stderr: "vigil-test sub: flag provided but not defined: -bogus (see vigil-test sub --help)\n", wantNodes: 2},
		{name: "positional", args: []string{"extra"}, stderr: "vigil-test sub: unexpected argument \"extra\" (see vigil-test sub --help)\n", wantNodes: 2},
		{name: "check", args: []string{"--nodes", "0"}, stderr: "vigil-test sub: --nodes 0: want 1 or more (see vigil-test sub --help)\n", checkFails: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New("vigil-test", "sub", "usage: vigil-test sub\n")
			nodes := c.Flags.Int("nodes", 2, "simulated nodes")
			var stdout, stderr bytes.Buffer
			err := c.Parse(tt.args, &stdout, &stderr, func() error {
				if *nodes < 1 {
					return fmt.Errorf("--nodes %d: want 1 or more", *nodes)
				}
				return nil
			})
			switch {
			case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			case tt.wantErr == nil && (err != nil) != (tt.stderr != ""):
				t.Errorf("err = %v, stderr %q", err, stderr.String())
			}
			if stdout.String() != tt.stdout || stderr.String() != tt.stderr {
				t.Errorf("stdout %q, stderr %q; want %q, %q", stdout.String(), stderr.String(), tt.stdout, tt.stderr)
			}
			if !tt.checkFails && err == nil && *nodes != tt.wantNodes {
				t.Errorf("nodes = %d, want %d", *nodes, tt.wantNodes)
			}
			if err == nil && c.Given("nodes") != tt.wantGiven {
				t.Errorf("Given(nodes) = %v", !tt.wantGiven)
			}
		})
	}
}
