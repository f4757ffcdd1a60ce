package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/vigil-hpc/vigil/config"
	"github.com/vigil-hpc/vigil/config/watchcfg"
	"github.com/vigil-hpc/vigil/internal/kmsg"
	"github.com/vigil-hpc/vigil/watcher/joblog"
	"github.com/vigil-hpc/vigil/watcher/loop"
)

const rulesUsage = `Usage: vigil-watch rules test [--config FILE] [--kmsg] [--nodes n1,n2,...] [--all] FILE...
       vigil-watch rules list [--config FILE]

What each line of a job's output (or, with --kmsg, of a kernel log) means to
vigil-watch: the evidence kind, whether it is a device fault, the rule that
matched (the shipped rules, overridden by the site's [[watch.rules]] of the
config), the host that printed it (with --nodes, the job's nodes) and the
peer it accuses. Lines that mean nothing are left out unless --all.
A kernel log is /dev/kmsg's records (dmesg -r, or "cat /dev/kmsg"), syslog's
or journalctl -k's lines, or dmesg's; each message is read from its start, as
the watcher reads it: a line written from user space (another facility or
program than the kernel's) means nothing.
"rules list" prints the rules in force, the site's first.

Exit status: 0, 1 when a file could not be read, 2 on a usage or config
error (it names the key and line).
`

// runRules is "vigil-watch rules ...".
func runRules(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("vigil-watch rules", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	conf := fs.String("config", config.DefaultPath, "the config whose [[watch.rules]] apply")
	kmsg := fs.Bool("kmsg", false, "the files are kernel logs")
	nodes := fs.String("nodes", "", "the job's nodes, comma-separated, to tell who printed a line")
	all := fs.Bool("all", false, "also print the lines that mean nothing")
	if len(args) == 0 || (args[0] != "test" && args[0] != "list") {
		fmt.Fprint(stderr, rulesUsage)
		return exitUsage
	}
	verb := args[0]
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, rulesUsage)
			return exitOK
		}
		fmt.Fprintf(stderr, "vigil-watch rules: %v\n%s", err, rulesUsage)
		return exitUsage
	}
	if err := siteRules(*conf, isSet(fs, "config")); err != nil {
		fmt.Fprintf(stderr, "vigil-watch rules: %v\n", err)
		return exitUsage
	}
	if verb == "list" {
		listRules(stdout)
		return exitOK
	}
	if fs.NArg() == 0 {
		fmt.Fprintf(stderr, "vigil-watch rules test: give at least one file\n%s", rulesUsage)
		return exitUsage
	}
	stream := "stderr"
	if *kmsg {
		stream = "kmsg"
	}
	layout := joblog.Layout{}
	if *nodes != "" {
		layout.Nodes = strings.Split(*nodes, ",")
	}
	code := exitOK
	for _, path := range fs.Args() {
		if err := testFile(path, stream, layout, *all, stdout); err != nil {
			fmt.Fprintf(stderr, "vigil-watch rules: %v\n", err)
			code = exitError
		}
	}
	return code
}

// siteRules loads the config's [[watch.rules]] into the matcher.
func siteRules(path string, explicit bool) error {
	f, err := loadConfig(path, explicit)
	if err != nil {
		return err
	}
	s := watchcfg.Default()
	if err := s.Load(f); err != nil {
		return err
	}
	if _, err := s.LineRules(); err != nil {
		return f.Errorf(watchcfg.Section+".rules", "%v", err)
	}
	return loop.UseSiteRules(s)
}

// listRules prints the rules in force.
func listRules(w io.Writer) {
	shipped, _ := joblog.ShippedRules()
	for _, r := range joblog.ActiveRules().Rules() {
		origin := "site"
		for _, s := range shipped.Rules() {
			if s.Spec.Name == r.Name && s.Spec.Match == r.Match && s.Spec.Kind == r.Kind {
				origin = "shipped"
			}
		}
		fault := ""
		if r.Fault {
			fault = " fault"
		}
		fmt.Fprintf(w, "%-24s %-11s%s %s [%s] %s\n", r.Name, r.Kind, fault, origin, streamOr(r.Stream), r.Match)
		if o := joblog.RuleOrigin(r.Name); o != "" && origin == "shipped" {
			fmt.Fprintf(w, "%-24s   origin: %s\n", "", o)
		}
		if r.Source != "" {
			fmt.Fprintf(w, "%-24s   source: %s\n", "", r.Source)
		}
	}
}

func streamOr(s string) string {
	if s == "" {
		return "any"
	}
	return s
}

// lineIn is what a line of a file of stream means: for a kernel log, the
// message of the record or text line (kmsg.Parse), nothing for one written
// from user space or for a record's continuation line.
func lineIn(stream, line string) (joblog.Match, bool) {
	if stream != "kmsg" {
		return joblog.LineIn(stream, line)
	}
	rec := kmsg.Parse([]byte(line))
	if rec.User || strings.HasPrefix(line, " ") {
		return joblog.Match{}, false
	}
	return joblog.LineIn(stream, rec.Text)
}

// testFile prints what each line of path means.
func testFile(path, stream string, layout joblog.Layout, all bool, w io.Writer) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		m, ok := lineIn(stream, line)
		if !ok {
			if all {
				fmt.Fprintf(w, "%s:%d: -  | %s\n", path, n, line)
			}
			continue
		}
		desc := string(m.Kind)
		if m.Fault {
			desc += " fault"
		}
		if m.Rule != "" {
			desc += " rule=" + m.Rule
		}
		if stream != "kmsg" {
			if src := joblog.Attribute(line, layout); src.Host != "" {
				desc += " host=" + src.Host + " (" + src.By + ")"
			} else {
				desc += " host=? (job-level: names no host)"
			}
		}
		if m.Peer != "" {
			desc += " accuses=" + m.Peer
		}
		fmt.Fprintf(w, "%s:%d: %s | %s\n", path, n, desc, line)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
