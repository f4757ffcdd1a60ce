// Package linerules holds the rules that say what a line of a job's output
// or of the kernel log means: a pattern, the kind of evidence it is, and
// what it says about the host that printed it (a device fault) and about a
// peer it names. The watcher ships its rules as data (watcher/joblog's
// rules.toml) and a site adds or overrides rules in vigil.toml's
// [[watch.rules]]; both are compiled and checked here, at load: every rule
// must match its own examples and none of its counter-examples. It is a
// leaf package, so that the config's validation and the watcher share it.
package linerules

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Streams a rule may be limited to. Only a rule of StreamKmsg reads
// kernel lines, and it matches from the start of the message: a user can
// make the kernel print any text after what the kernel prints first (a
// segfault line ends with the name of the user's file), never in place of
// the facility a driver's line starts with ("nfs: ", "NVRM: ").
const (
	StreamAny    = ""       // any line of the job's output
	StreamOutput = "output" // the job's standard output and error
	StreamKmsg   = "kmsg"   // the kernel log, matched from the message's start
)

// KindIgnore is the kind of a rule that silences the lines it matches.
const KindIgnore = "ignore"

// Kinds are the evidence kinds a rule may name: those the watcher's
// matcher and digest know (watcher/joblog's Kind constants).
var Kinds = []string{"nccl-net", "nccl-retry", "nccl-warn", "watchdog", "traceback", "cuda-error", "progress",
	"xid", "ecc", "npu-error", "task-exit", "oom-kill", "hung-task", "nfs", "peer-closed",
	"collective-mismatch", "host-banner", "rendezvous"}

// ErrRule is wrapped by every error about a rule.
var ErrRule = errors.New("invalid line rule")

// Spec is one rule as written in a rules file or in [[watch.rules]].
type Spec struct {
	// Name identifies the rule; a site rule of a shipped rule's name
	// replaces it.
	Name string `toml:"name"`
	// Kind is the evidence kind of a matching line (watcher/joblog's
	// kinds: nccl-net, cuda-error, traceback, task-exit, oom-kill,
	// hung-task, nfs, ...), or "ignore".
	Kind string `toml:"kind"`
	// Match is the RE2 pattern a line must contain; a kernel-log rule's
	// must match at the start of the message.
	Match string `toml:"match"`
	// Stream limits the rule to the job's output or the kernel log.
	Stream string `toml:"stream"`
	// Fault is set when the line implicates the device of the host that
	// printed it.
	Fault bool `toml:"fault"`
	// Peer, when set, is an RE2 pattern whose first group is the peer the
	// line accuses (an address or a host name).
	Peer string `toml:"peer"`
	// Examples are lines the rule must match (at least one).
	Examples []string `toml:"examples"`
	// Unlike are lines the rule must not match.
	Unlike []string `toml:"unlike"`
	// Source says where the wording comes from (a URL), for people.
	Source string `toml:"source"`
}

// Rule is a compiled Spec.
type Rule struct {
	Spec
	re, peer *regexp.Regexp
}

// Set is an ordered set of rules: the first that matches a line wins.
type Set struct{ rules []Rule }

// Compile checks and compiles specs; kinds are the evidence kinds a rule
// may name (KindIgnore is always allowed). The error names the rule and
// the field.
func Compile(specs []Spec, kinds []string) (Set, error) {
	var s Set
	var errs []error
	seen := map[string]bool{}
	for i, sp := range specs {
		r, err := compile(sp, kinds)
		if err == nil && seen[sp.Name] {
			err = fmt.Errorf("%w: rule %q is defined twice", ErrRule, sp.Name)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("rule %d: %w", i+1, err))
			continue
		}
		seen[sp.Name] = true
		s.rules = append(s.rules, r)
	}
	return s, errors.Join(errs...)
}

func compile(sp Spec, kinds []string) (Rule, error) {
	bad := func(field, format string, args ...any) (Rule, error) {
		return Rule{}, fmt.Errorf("%w: rule %q: %s: %s", ErrRule, sp.Name, field, fmt.Sprintf(format, args...))
	}
	switch {
	case sp.Name == "":
		return bad("name", "missing")
	case sp.Kind != KindIgnore && !slices.Contains(kinds, sp.Kind):
		return bad("kind", "%q: want one of %s or %q", sp.Kind, strings.Join(kinds, ", "), KindIgnore)
	case sp.Stream != StreamAny && sp.Stream != StreamOutput && sp.Stream != StreamKmsg:
		return bad("stream", "%q: want %q, %q or empty (any)", sp.Stream, StreamOutput, StreamKmsg)
	case len(sp.Examples) == 0:
		return bad("examples", "give at least one line the rule must match")
	}
	r := Rule{Spec: sp}
	pattern, where := sp.Match, ""
	if sp.Stream == StreamKmsg {
		pattern = `^(?:` + sp.Match + `)`
		where = " from its start (a kernel-log rule matches the message from the facility its line starts with, as in \"nfs: server \")"
	}
	var err error
	if _, err = regexp.Compile(sp.Match); err != nil || sp.Match == "" {
		return bad("match", "%q: not a pattern: %v", sp.Match, err)
	}
	r.re = regexp.MustCompile(pattern) // sp.Match is whole: the group holds all of it
	if sp.Peer != "" {
		if r.peer, err = regexp.Compile(sp.Peer); err != nil || r.peer.NumSubexp() < 1 {
			return bad("peer", "%q: want a pattern with one group (the peer)", sp.Peer)
		}
	}
	for _, ex := range sp.Examples {
		if !r.re.MatchString(ex) {
			return bad("examples", "does not match its example %q%s", ex, where)
		}
	}
	for _, ex := range sp.Unlike {
		if r.re.MatchString(ex) {
			return bad("unlike", "matches %q, which it must not", ex)
		}
	}
	return r, nil
}

// Override returns site's rules, then those of s that site does not
// replace by name.
func (s Set) Override(site Set) Set {
	out := Set{rules: slices.Clone(site.rules)}
	for _, r := range s.rules {
		if !slices.ContainsFunc(site.rules, func(x Rule) bool { return x.Name == r.Name }) {
			out.rules = append(out.rules, r)
		}
	}
	return out
}

// Rules returns the rules in order.
func (s Set) Rules() []Rule { return slices.Clone(s.rules) }

// Match returns the first rule that matches line of stream (StreamOutput
// or StreamKmsg) and the peer it accuses ("" when none).
func (s Set) Match(line, stream string) (Rule, string, bool) {
	for _, r := range s.rules {
		if r.Stream != StreamAny && r.Stream != stream || r.Stream == StreamAny && stream == StreamKmsg {
			continue
		}
		if !r.re.MatchString(line) {
			continue
		}
		peer := ""
		if r.peer != nil {
			if m := r.peer.FindStringSubmatch(line); m != nil {
				peer = m[1]
			}
		}
		return r, peer, true
	}
	return Rule{}, "", false
}
