package benchmarks

import (
	"context"
	"io"
	"sync"
)

// Command is a subcommand of vigil-prolog that a check package brings
// (multinode-selftest): it runs with the arguments after its name and
// returns the exit code.
type Command func(ctx context.Context, args []string, stdout, stderr io.Writer) int

var (
	commandMu sync.Mutex
	commands  = map[string]Command{}
)

// RegisterCommand adds the subcommand name, so that vigil-prolog runs it
// without naming the package that brings it. It is meant to be called
// from init() and panics on a name registered twice.
func RegisterCommand(name string, run Command) {
	commandMu.Lock()
	defer commandMu.Unlock()
	if _, dup := commands[name]; dup || name == "" {
		panic("benchmarks: RegisterCommand of " + name + " twice or without a name")
	}
	commands[name] = run
}

// LookupCommand returns the subcommand name registered.
func LookupCommand(name string) (Command, bool) {
	commandMu.Lock()
	defer commandMu.Unlock()
	run, ok := commands[name]
	return run, ok
}
