// Package cmdline holds what the subcommands of vigil's programs share: a
// flag set that reports its errors instead of printing them, and one way
// to answer --help and a bad command line.
package cmdline

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// Command is the command line of one subcommand ("vigil-prolog
// policy-check").
type Command struct {
	// Flags are the subcommand's flags: define them, then call Parse.
	Flags *flag.FlagSet
	name  string
	usage string
}

// New makes the command line of prog's subcommand sub, whose --help
// prints usage.
func New(prog, sub, usage string) *Command {
	name := prog + " " + sub
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &Command{Flags: fs, name: name, usage: usage}
}

// Parse parses args, refuses positional arguments, then runs check (when
// not nil) on the parsed values. It returns nil when the subcommand is to
// run. On -h or --help it prints the usage on stdout and returns
// flag.ErrHelp; on any other error it prints "prog sub: ERR (see prog sub
// --help)" on stderr and returns the error.
func (c *Command) Parse(args []string, stdout, stderr io.Writer, check func() error) error {
	err := c.Flags.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, c.usage)
		return err
	case err == nil && c.Flags.NArg() > 0:
		err = fmt.Errorf("unexpected argument %q", c.Flags.Arg(0))
	case err == nil && check != nil:
		err = check()
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v (see %s --help)\n", c.name, err, c.name)
	}
	return err
}

// Given says whether the flag name was set on the command line.
func (c *Command) Given(name string) bool {
	given := false
	c.Flags.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}
