// Command vigil-watch watches one Slurm job on one node and says when it has
// hung: no I/O progress and flat resource usage for a whole window. It runs
// as a job step, one task per node:
//
//	srun --overlap --ntasks-per-node=1 vigil-watch &
//
// `vigil-watch replay FILE` runs the same rule offline over a recorded trace;
// `vigil-watch rules test FILE` shows what each line of a log means;
// `vigil-watch ras-query` asks NCCL's RAS service of the job how it stands.
// See `vigil-watch --help` and docs/watch.md.
package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/config"
	"github.com/vigil-hpc/vigil/config/watchcfg"
	"github.com/vigil-hpc/vigil/watcher/loop"
	"github.com/vigil-hpc/vigil/watcher/ncclras"
)

// Exit codes.
const (
	exitOK    = 0 // the job ended, the watcher was signalled, or replay finished
	exitError = 1 // the watcher could not run (not in a job, no cgroup, unreadable trace ...)
	exitUsage = 2 // bad flags, environment or config
)

// stdin is what `vigil-watch replay -` reads.
var stdin io.Reader = os.Stdin

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	code := realMain(ctx, os.Args[1:], os.LookupEnv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// cli holds what the flags say beyond the [watch] settings.
type cli struct {
	configPath string
	record     string
	accelTrace string
	root       string
	logLevel   string
	dryRun     bool
	nodeAddrs  string
	html       string // replay: the HTML page to write
}

// invocation is a parsed command line.
type invocation struct {
	replay   bool
	files    []string // replay's traces ("-": standard input)
	settings loop.Settings
	cli
}

// realMain parses the command line, runs the watch loop or replay, and maps
// the result to an exit code.
func realMain(ctx context.Context, args []string, lookup func(string) (string, bool), stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "rules" {
		return runRules(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "ras-query" {
		return runRASQuery(ctx, args[1:], lookup, stdout, stderr)
	}
	var said bytes.Buffer
	inv, code := parseArgs(args, lookup, stdout, io.MultiWriter(stderr, &said))
	if code == exitUsage && !inv.replay {
		// A watcher that vigil's SPANK plugin started logs to a file the
		// user may never read: the job's comment and output say it too.
		if err := loop.TellNotWatching(ctx, lookup, said.String()); err != nil {
			fmt.Fprintf(stderr, "vigil-watch: telling the job's user: %v\n", err)
		}
	}
	if code >= 0 {
		return code
	}
	if inv.replay {
		if err := loop.Replay(inv.files, inv.html, inv.settings, stdin, stdout, stderr); err != nil {
			fmt.Fprintf(stderr, "vigil-watch: %v\n", err)
			return exitError
		}
		return exitOK
	}
	log := logrus.New()
	log.SetOutput(stderr)
	log.SetFormatter(&logrus.TextFormatter{FullTimestamp: true, TimestampFormat: time.RFC3339})
	level, _ := logrus.ParseLevel(inv.logLevel) // parseArgs checked it
	log.SetLevel(level)
	addrs, err := loop.ParseNodeAddrs(inv.nodeAddrs)
	if err != nil {
		fmt.Fprintf(stderr, "vigil-watch: %v\n", err)
		return exitUsage
	}
	err = loop.Watch(ctx, loop.Options{
		Settings: inv.settings, Record: cmp.Or(inv.record, inv.settings.Record), AccelTrace: inv.accelTrace, DryRun: inv.dryRun,
		Root: inv.root, Lookup: lookup, Stdout: stdout, Log: log, NodeAddrs: addrs,
	})
	if err != nil {
		log.WithError(err).Error("vigil-watch failed")
		return exitError
	}
	return exitOK
}

// runRASQuery is `vigil-watch ras-query [ADDR]`: NCCL's RAS service of
// the job (ADDR, else ncclras.Addr of the environment), asked once, its
// answer printed as one JSON line.
func runRASQuery(ctx context.Context, args []string, lookup func(string) (string, bool), stdout, stderr io.Writer) int {
	addr := ncclras.Addr(lookup)
	switch {
	case len(args) == 1 && !strings.HasPrefix(args[0], "-"):
		addr = args[0]
	case len(args) > 0:
		fmt.Fprintln(stderr, "usage: vigil-watch ras-query [ADDR] (default: NCCL_RAS_ADDR, else "+ncclras.DefaultAddr+")")
		return exitUsage
	case addr == "":
		fmt.Fprintln(stderr, "vigil-watch ras-query: NCCL_RAS_ENABLE=0: the job runs without RAS")
		return exitError
	}
	st, err := ncclras.Query(ctx, addr, ncclras.DefaultTimeout)
	if err != nil {
		fmt.Fprintf(stderr, "vigil-watch ras-query: %v\n", err)
		return exitError
	}
	b, _ := json.Marshal(st)
	fmt.Fprintln(stdout, string(b))
	return exitOK
}

// parseArgs merges flags over the environment over the config file over the
// defaults. It returns an exit code >= 0 when there is nothing to run
// (--help, printed on stdout, or a usage error already reported on stderr
// in one line per problem), else -1.
func parseArgs(args []string, lookup func(string) (string, bool), stdout, stderr io.Writer) (invocation, int) {
	var inv invocation
	inv.replay, args = splitReplay(args)
	help := "vigil-watch --help"
	if inv.replay {
		help = "vigil-watch replay --help"
	}
	fail := func(err error) (invocation, int) {
		fmt.Fprintf(stderr, "vigil-watch: %v\n", err)
		return inv, exitUsage
	}
	usageErr := func(err error) (invocation, int) {
		fmt.Fprintf(stderr, "vigil-watch: %v (see %s)\n", err, help)
		return inv, exitUsage
	}
	// The flags: the [watch] ones as given (watchcfg.Overrides), applied
	// by Resolve; --help shows the shipped defaults.
	fs, given := flags(inv.replay, &inv.cli, io.Discard)
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			usage(fs, inv.replay)
			return inv, exitOK
		}
		return usageErr(err)
	}
	if inv.replay && fs.NArg() == 0 {
		return usageErr(errors.New("replay needs at least one trace file, or - for standard input"))
	}
	if !inv.replay && fs.NArg() != 0 {
		return usageErr(fmt.Errorf("unexpected arguments %q", fs.Args()))
	}
	if _, err := logrus.ParseLevel(inv.logLevel); err != nil && !inv.replay {
		return usageErr(fmt.Errorf("--log-level: %w", err))
	}
	file, err := loadConfig(inv.configPath, isSet(fs, "config"))
	if err != nil {
		return fail(err)
	}
	// File, then the job's environment within [policy], then the flags:
	// one function, one validation. replay reads no environment.
	src := loop.Sources{File: file, Flags: given()}
	if !inv.replay {
		src.Lookup = lookup
	}
	res, err := loop.Resolve(src)
	if res.Skip != "" {
		fmt.Fprintf(stderr, "vigil-watch: not watching: %s\n", res.Skip)
		return inv, exitOK
	}
	for _, m := range res.Warnings {
		fmt.Fprintf(stderr, "vigil-watch: policy: %s\n", m)
	}
	var invalid *loop.InvalidError
	if errors.As(err, &invalid) {
		if fromFile := reportInvalid(invalid, help, stderr); fromFile != nil {
			return fail(fromFile)
		}
		return inv, exitUsage
	}
	if err != nil {
		return fail(err)
	}
	s := res.Settings
	inv.settings = s
	inv.files = fs.Args()
	return inv, -1
}

// splitReplay finds the replay subcommand: first, or after flags
// ("vigil-watch --config X replay FILE"); it returns the arguments without
// it. A word that is a flag's value ("--record replay") is not it.
func splitReplay(args []string) (bool, []string) {
	fs, _ := flags(false, new(cli), io.Discard)
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "replay" {
			return true, append(slices.Clone(args[:i]), args[i+1:]...)
		}
		if a == "--" || !strings.HasPrefix(a, "-") {
			return false, args
		}
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		if f := fs.Lookup(name); f != nil {
			if b, ok := f.Value.(interface{ IsBoolFlag() bool }); !ok || !b.IsBoolFlag() {
				i++ // its value
			}
		}
	}
	return false, args
}

// reportInvalid writes each error of a flag or an environment variable in
// its own words, one a line, and returns the errors about the config file
// (nil when there are none), for the caller to report with the file's name.
func reportInvalid(invalid *loop.InvalidError, help string, stderr io.Writer) error {
	var fromFile []error
	for _, e := range invalid.Errs {
		var oe *config.OverrideError
		switch {
		case errors.As(e, &oe) && oe.From == config.FromFlag:
			fmt.Fprintf(stderr, "vigil-watch: %v (see %s)\n", e, help)
		case errors.As(e, &oe):
			fmt.Fprintf(stderr, "vigil-watch: %v\n", e)
		default:
			fromFile = append(fromFile, e)
		}
	}
	return errors.Join(fromFile...)
}

// loadConfig reads the config file; the default path may be missing.
func loadConfig(path string, explicit bool) (*config.File, error) {
	f, err := config.Load(path)
	if errors.Is(err, fs.ErrNotExist) && !explicit {
		return config.Empty(path), nil
	}
	return f, err
}

func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// flags binds the flags to c and registers the [watch] ones (those of
// the detector alone for replay) from watchcfg.Overrides; the function
// returned gives the values of those given.
func flags(replay bool, c *cli, out io.Writer) (*flag.FlagSet, func() config.Values) {
	name := "vigil-watch"
	if replay {
		name = "vigil-watch replay"
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() { usage(fs, replay) }

	fs.StringVar(&c.configPath, "config", config.DefaultPath, "config `file`; its [watch] section sets the defaults below (a missing default file is fine)")
	var keep func(config.Override) bool
	if replay {
		detector := config.Keys(watchcfg.Hang{})
		keep = func(k config.Override) bool { return slices.Contains(detector, k.Key) }
	}
	given := watchcfg.Overrides().Flags(fs, keep)
	if replay {
		fs.StringVar(&c.html, "html", "", "also write the replay as one self-contained HTML `file`: the digests and culprits on top, one chart per host of I/O rate, CPU, device utilisation and power")
		return fs, given
	}
	fs.StringVar(&c.record, "record", "", "append every sample as one JSON line to `file` (for replay); %N is replaced by the node name, %j by the job id ([watch] record)")
	fs.StringVar(&c.accelTrace, "accel-trace", "", "read accelerator samples from a recorded trace `file` instead of NVML/DCMI")
	fs.BoolVar(&c.dryRun, "dry-run", false, "act on nothing; log what would be done")
	fs.StringVar(&c.root, "root", "/", "root `dir`ectory of /proc and /sys (for tests on fixture trees)")
	fs.StringVar(&c.logLevel, "log-level", "info", "log `level`: debug, info, warning, error")
	fs.StringVar(&c.nodeAddrs, "node-addrs", "", "`node=addr,...`: the addresses of the job's nodes for the watchers' meeting (default: each node's NodeAddr from scontrol show node)")
	return fs, given
}

func usage(fs *flag.FlagSet, replay bool) {
	w := fs.Output()
	if replay {
		fmt.Fprint(w, replayHelp)
	} else {
		fmt.Fprint(w, watchHelp)
	}
	fmt.Fprint(w, "\nOPTIONS\n")
	config.PrintFlags(w, fs)
	if !replay {
		fmt.Fprint(w, watchHelpTail)
	}
}
