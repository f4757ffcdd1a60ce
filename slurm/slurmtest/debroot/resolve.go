package main

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strings"
)

// pkg is one stanza of a Debian Packages index: what the resolver and the
// fetcher need of it.
type pkg struct {
	Name, Version, Arch, Filename, SHA256 string
	// Maintainer and Description (its first line) go to dpkg's status.
	Maintainer, Description string
	Essential               bool
	// Depends holds Pre-Depends and Depends: each entry is a list of
	// alternatives, package names without versions or architecture.
	Depends  [][]string
	Provides []string
}

// index is a suite's packages by name, and the real packages that provide
// each virtual one.
type index struct {
	byName    map[string]*pkg
	providers map[string][]string
}

// parseIndex reads a Packages file.
func parseIndex(r io.Reader) (*index, error) {
	idx := &index{byName: map[string]*pkg{}, providers: map[string][]string{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	cur := &pkg{}
	field := ""
	flush := func() {
		if cur.Name != "" {
			if _, dup := idx.byName[cur.Name]; !dup {
				idx.byName[cur.Name] = cur
				for _, v := range cur.Provides {
					idx.providers[v] = append(idx.providers[v], cur.Name)
				}
			}
		}
		cur = &pkg{}
	}
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			flush()
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			continue // a continuation (Description): nothing we read
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("packages index: line without a field: %q", line)
		}
		field, v = k, strings.TrimSpace(v)
		switch field {
		case "Package":
			cur.Name = v
		case "Version":
			cur.Version = v
		case "Architecture":
			cur.Arch = v
		case "Filename":
			cur.Filename = v
		case "Maintainer":
			cur.Maintainer = v
		case "Description":
			cur.Description = v
		case "SHA256":
			cur.SHA256 = v
		case "Essential":
			cur.Essential = v == "yes"
		case "Depends", "Pre-Depends":
			cur.Depends = append(cur.Depends, parseRelations(v)...)
		case "Provides":
			for _, alt := range parseRelations(v) {
				cur.Provides = append(cur.Provides, alt...)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	flush()
	if len(idx.byName) == 0 {
		return nil, fmt.Errorf("packages index: no packages")
	}
	return idx, nil
}

// parseRelations splits "a (>= 1) | b:any, c [amd64]" into [[a b] [c]].
func parseRelations(s string) [][]string {
	var out [][]string
	for _, group := range strings.Split(s, ",") {
		var alts []string
		for _, alt := range strings.Split(group, "|") {
			alt = strings.TrimSpace(alt)
			if i := strings.IndexAny(alt, " (["); i >= 0 {
				alt = alt[:i]
			}
			alt, _, _ = strings.Cut(alt, ":")
			if alt != "" {
				alts = append(alts, alt)
			}
		}
		if len(alts) > 0 {
			out = append(out, alts)
		}
	}
	return out
}

// closure returns the packages to unpack: the suite's Essential set and
// want, with every package they depend on. An alternative already chosen
// is kept; else the first real package, else the first provider of a
// virtual one. A name nothing in the suite gives is an error.
func (idx *index) closure(want []string) ([]*pkg, error) {
	chosen := map[string]bool{}
	var queue []string
	add := func(name string) {
		if !chosen[name] {
			chosen[name] = true
			queue = append(queue, name)
		}
	}
	for _, n := range want {
		p, err := idx.pick([]string{n}, chosen)
		if err != nil {
			return nil, err
		}
		add(p)
	}
	for _, p := range idx.byName {
		if p.Essential {
			add(p.Name)
		}
	}
	for len(queue) > 0 {
		p := idx.byName[queue[0]]
		queue = queue[1:]
		for _, alts := range p.Depends {
			name, err := idx.pick(alts, chosen)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p.Name, err)
			}
			add(name)
		}
	}
	out := make([]*pkg, 0, len(chosen))
	for n := range chosen {
		out = append(out, idx.byName[n])
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// pick chooses one real package for a list of alternatives, in their
// order as apt does: the first that is a real package, or a virtual one
// whose provider is chosen already (else its first provider by name).
// Versions are not compared: one suite's packages fit each other, and an
// alternative further on is often there for other releases
// ("python3-sympy | python3-supported-max (<< 3.9)").
func (idx *index) pick(alts []string, chosen map[string]bool) (string, error) {
	for _, a := range alts {
		if _, ok := idx.byName[a]; ok {
			return a, nil
		}
		ps := append([]string(nil), idx.providers[a]...)
		if len(ps) == 0 {
			continue
		}
		sort.Strings(ps)
		for _, p := range ps {
			if chosen[p] {
				return p, nil
			}
		}
		return ps[0], nil
	}
	return "", fmt.Errorf("no package gives %s", strings.Join(alts, " | "))
}
