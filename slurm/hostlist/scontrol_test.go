package hostlist

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var hostlistSeed = flag.Uint64("hostlist.seed", 1, "seed of the expressions TestHostlistMatchesScontrol generates")

// TestHostlistMatchesScontrol compares Expand and Compress
// with the installed `scontrol show hostnames` / `scontrol show hostlist` on
// generated expressions and host lists, valid and invalid ones. scontrol
// needs no daemon for these, only a slurm.conf.
func TestHostlistMatchesScontrol(t *testing.T) {
	bin, err := exec.LookPath("scontrol")
	if err != nil {
		t.Fatalf("scontrol not found (%v): install Debian package slurm-client", err)
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "slurm.conf")
	if err := os.WriteFile(conf, []byte("ClusterName=hostlist\nSlurmctldHost=localhost\nNodeName=n1\nPartitionName=p Nodes=n1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	n := 500
	if testing.Short() {
		n = 150
	}
	seed := *hostlistSeed
	t.Logf("seed %d (-hostlist.seed to change)", seed)
	g := &hostlistGen{r: rand.New(rand.NewPCG(seed, 0x5eed))}

	var exprs []string
	for len(exprs) < n {
		exprs = append(exprs, g.expr())
	}
	exprs = append(exprs, hostlistFixedExprs...)

	var items []scontrolItem
	for _, e := range exprs {
		items = append(items, scontrolItem{kind: "hostnames", arg: e})
	}
	// Host lists to compress: expansions of the accepted expressions (as
	// they are, shuffled, with duplicates) and lists made up here.
	var lists [][]string
	for _, e := range exprs {
		hosts, err := Expand(e)
		if err != nil || len(hosts) == 0 {
			continue
		}
		lists = append(lists, hosts)
		switch g.r.IntN(3) {
		case 0:
			h := slices.Clone(hosts)
			g.r.Shuffle(len(h), func(i, j int) { h[i], h[j] = h[j], h[i] })
			lists = append(lists, h)
		case 1:
			h := slices.Clone(hosts)
			for k := 0; k < 3; k++ {
				i := g.r.IntN(len(h))
				h = slices.Insert(h, g.r.IntN(len(h)+1), h[i])
			}
			lists = append(lists, h)
		}
	}
	for k := 0; k < n/2; k++ {
		lists = append(lists, g.hosts())
	}
	for _, l := range lists {
		items = append(items, scontrolItem{kind: "hostlist", arg: strings.Join(l, ",")})
	}

	start := time.Now()
	runScontrolItems(t, bin, conf, items)
	t.Logf("%d scontrol queries in %v", len(items), time.Since(start).Round(time.Millisecond))

	var both, neither, stricter int
	for i, e := range exprs {
		it := items[i]
		got, err := Expand(e)
		slurmOK := it.stderr == "" && len(it.lines) > 0
		for _, h := range it.lines {
			if h == "" || strings.ContainsAny(h, "[],\t\n\v\f\r ") {
				slurmOK = false
			}
		}
		switch {
		case err == nil && !slurmOK:
			t.Errorf("Expand(%q) = %q, but scontrol rejects it: stdout %q, stderr %q", e, got, it.lines, it.stderr)
		case err == nil && !slices.Equal(got, it.lines):
			t.Errorf("Expand(%q) = %q, scontrol says %q", e, got, it.lines)
		case err == nil:
			both++
		case !errors.Is(err, ErrInvalid):
			t.Errorf("Expand(%q): error %v does not wrap ErrInvalid", e, err)
		case slurmOK:
			var he *Error
			if !errors.As(err, &he) || !he.stricter {
				t.Errorf("Expand(%q): %v, but scontrol accepts it: %q", e, err, it.lines)
			} else {
				stricter++
				t.Logf("deliberately stricter than scontrol: %v (scontrol: %q)", err, it.lines)
			}
		default:
			neither++
		}
	}
	t.Logf("expressions: %d accepted by both, %d rejected by both, %d accepted only by scontrol (deliberately)", both, neither, stricter)
	// Guard against a generator that drifted into testing nothing.
	if both < len(exprs)/3 || neither < len(exprs)/10 {
		t.Errorf("generator is off balance: %d of %d accepted, %d rejected by both", both, len(exprs), neither)
	}

	for k, l := range lists {
		it := items[len(exprs)+k]
		got := Compress(l)
		if it.stderr != "" || len(it.lines) != 1 || it.lines[0] != got {
			t.Errorf("Compress(%q) = %q, scontrol says %q (stderr %q)", l, got, it.lines, it.stderr)
		}
	}
	t.Logf("compressed %d host lists", len(lists))
}

// hostlistFixedExprs are always compared, whatever the seed.
var hostlistFixedExprs = []string{
	"n[01-03]", "n[1-010]", "n[010-1]", "n[1-2]-ib", "rack[1-2]n[1-4]", "a[1-2]b[3-4]c[5-6]",
	"n[3,1,2,1]", "n1,n1,n2", "n[1-3", "n1-3]", "", ",", "n[a-c]", "n[1-3]],x", "n[[1-2]]",
	"a,,b", "n[01-3]", "n[]", "n[-3]", "n[1-]", "[1-3]", "n[1-3][a]", "n[0-65535]x", "n[0-65536]",
	"n[+1-+3]", "a[x]b[1-2]c[3]", "[", "[12", "a[1]b[2", "n1,n01,n001", "n9,n010,n[8-10]",
	"a b", "n[ 1, 2]", "n[1- 3]", "n [1-2]", "a\tb", "n[1,]", "n[,1]", "n[1x2]", "n[1-2-3]",
	"n[1--2]", "[1-2][3-4]", "n]", "n18446744073709551614", "n99999999999999999999999",
	"n[18446744073709551615]", "n[0-18446744073709551615]", "x[1-2]y[3]z[4-5]w[6]",
	"p[1-3]q[01-02]", "p1[1-2]", "0[1-2]", "n08,n09,n10,n011", "gpu-a[01-04,07]-ib[1]",
	"a[b,c[1],d]e[2]", "ab1,a\nb2", "[,],[],[[]]", "n[1- -2]", "a[1]b[2]c[3]d[4-5]",
	"n18446744073709551614,n[18446744073709551612-18446744073709551614]", "n[1-2]]", "]n[1]",
	"x[1,2]y[3,4]z[5-6]", "a[0-1]b[a]c[1]", "n1 ,n2", "n1,\tn2", "a[1-2]b", "a[ 1]b[2]",
	"n[1a-3]", "n[1.5-3]", "n[1 -3]", "n[1, 2]",
}

type scontrolItem struct {
	kind, arg string   // show <kind> <arg>
	lines     []string // stdout, one entry per line
	stderr    string
}

// runScontrolItems fills in the items' output. Items without white space or
// quotes go through one interactive scontrol (one command per line, with
// marker commands after each so the output can be split up again); the
// others, which scontrol's line reader would split, are run one by one.
// Long host lists are handed over in files (`show hostlist /path` reads one
// name per line), since scontrol's line editor is slow on long lines.
func runScontrolItems(t *testing.T, bin, conf string, items []scontrolItem) {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env := append(os.Environ(), "SLURM_CONF="+conf)
	var script bytes.Buffer
	var batch, single []int
	for i := range items {
		it := &items[i]
		if it.arg == "" || it.arg == "!!" || strings.ContainsAny(it.arg, "\"'\t\n\v\f\r ") {
			single = append(single, i)
			continue
		}
		k := len(batch)
		batch = append(batch, i)
		arg := it.arg
		if it.kind == "hostlist" && len(arg) > 100 {
			arg = filepath.Join(dir, fmt.Sprintf("list%d", k))
			if err := os.WriteFile(arg, []byte(strings.ReplaceAll(it.arg, ",", "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		fmt.Fprintf(&script, "show %s %s\nshow hostnames vigilout%d\nshow hostnames vigilerr%d[1]-\n", it.kind, arg, k, k)
	}
	cmd := exec.CommandContext(ctx, bin)
	cmd.Env = env
	cmd.Stdin = &script
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatalf("scontrol: %v", err)
	}
	for _, i := range single { // while the batch runs
		it := &items[i]
		c := exec.CommandContext(ctx, bin, "show", it.kind, it.arg)
		c.Env = env
		var o, e bytes.Buffer
		c.Stdout, c.Stderr = &o, &e
		if err := c.Run(); err != nil && e.Len() == 0 {
			t.Fatalf("scontrol show %s %q: %v", it.kind, it.arg, err)
		}
		it.lines = scontrolLines(o.String())
		it.stderr = e.String()
	}
	err := cmd.Wait()
	outs := splitScontrolOutput(out.String(), "vigilout%d", len(batch))
	errs := splitScontrolOutput(errb.String(), "Invalid hostlist: vigilerr%d[1]-", len(batch))
	if outs == nil || errs == nil {
		t.Fatalf("interactive scontrol (%v): output does not hold all %d markers\nstdout (end): %s\nstderr (end): %s",
			err, len(batch), hlTail(out.String(), 2000), hlTail(errb.String(), 2000))
	}
	for k, i := range batch {
		items[i].lines = outs[k]
		// The stderr marker ("[1]-") fails without logging a reason, so
		// all of a segment belongs to the command before it.
		items[i].stderr = strings.Join(errs[k], "\n")
	}
}

// splitScontrolOutput splits scontrol's output at the marker lines (one per
// batch entry), dropping the echoed command lines ("scontrol: ...").
func splitScontrolOutput(s, marker string, n int) [][]string {
	parts := make([][]string, 0, n)
	var cur []string
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, "scontrol: ") && !strings.HasPrefix(line, "scontrol: error: ") {
			continue
		}
		if len(parts) < n && line == fmt.Sprintf(marker, len(parts)) {
			parts = append(parts, cur)
			cur = nil
			continue
		}
		cur = append(cur, line)
	}
	if len(parts) != n {
		return nil
	}
	return parts
}

func scontrolLines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func hlTail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// hostlistGen makes random hostlist expressions in the shapes Slurm sees
// (prefixes, zero padding, lists, several bracket groups) and broken ones.
type hostlistGen struct{ r *rand.Rand }

var hostlistGenPrefixes = []string{"n", "node", "gpu-a", "c", "r1n", "x", "ib-", "login", "a.b", "nid0", "", "cn_", "sw-0-", "Z"}

func (g *hostlistGen) pick(s []string) string { return s[g.r.IntN(len(s))] }

func (g *hostlistGen) prefix() string {
	if g.r.IntN(4) > 0 {
		return g.pick(hostlistGenPrefixes)
	}
	const letters = "abcdefghijklmnopqrstuvwxyz-_.0123456789"
	b := []byte{byte('a' + g.r.IntN(26))}
	for k := g.r.IntN(6); k > 0; k-- {
		b = append(b, letters[g.r.IntN(len(letters))])
	}
	return string(b)
}

// num writes v zero padded to width pad.
func (g *hostlistGen) num(v, pad int) string {
	return fmt.Sprintf("%0*d", pad, v)
}

func (g *hostlistGen) padding() int {
	if g.r.IntN(2) == 0 {
		return 0
	}
	return 1 + g.r.IntN(4)
}

// group is a bracket group's content with at most about max hosts.
func (g *hostlistGen) group(max int) string {
	var elems []string
	pad := g.padding()
	for k := 1 + g.r.IntN(3); k > 0 && max > 0; k-- {
		lo := g.r.IntN(120)
		if g.r.IntN(4) == 0 {
			elems = append(elems, g.num(lo, pad))
			max--
			continue
		}
		hi := lo + 1 + g.r.IntN(min(max, 12))
		hiPad := pad
		if g.r.IntN(6) == 0 {
			hiPad = g.padding() // mismatched padding: the lower bound's counts
		}
		elems = append(elems, g.num(lo, pad)+"-"+g.num(hi, hiPad))
		max -= hi - lo + 1
	}
	if len(elems) == 0 {
		elems = append(elems, g.num(g.r.IntN(10), pad))
	}
	return strings.Join(elems, ",")
}

func (g *hostlistGen) token() string {
	switch g.r.IntN(10) {
	case 0, 1:
		if g.r.IntN(3) == 0 {
			return g.prefix() + "x" // no number
		}
		return g.prefix() + g.num(g.r.IntN(200), g.padding())
	case 2:
		return g.prefix() + "[" + g.group(12) + "]" + g.pick([]string{"a", "[", "]"}) + "[" + g.group(6) + "]"
	case 3:
		return g.prefix() + "[" + g.group(6) + "]" + g.pick([]string{"n", "-", "_x", ""}) + "[" + g.group(6) + "]"
	case 4:
		return g.prefix() + "[" + g.group(3) + "]b[" + g.group(3) + "]c[" + g.group(4) + "]"
	default:
		return g.prefix() + "[" + g.group(40) + "]"
	}
}

func (g *hostlistGen) expr() string {
	var toks []string
	for k := 1 + g.r.IntN(3); k > 0; k-- {
		toks = append(toks, g.token())
	}
	sep := ","
	if g.r.IntN(15) == 0 {
		sep = g.pick([]string{", ", " ", ",,", "\t"})
	}
	e := strings.Join(toks, sep)
	if g.r.IntN(3) == 0 {
		e = g.mutate(e)
	}
	return e
}

// mutate breaks (or merely twists) an expression the ways people and
// programs do.
func (g *hostlistGen) mutate(e string) string {
	at := func(c byte) int { // a random index of c in e, or -1
		var idx []int
		for i := 0; i < len(e); i++ {
			if e[i] == c {
				idx = append(idx, i)
			}
		}
		if len(idx) == 0 {
			return -1
		}
		return idx[g.r.IntN(len(idx))]
	}
	insert := func(i int, s string) string { return e[:i] + s + e[i:] }
	switch g.r.IntN(16) {
	case 0:
		if i := at(']'); i >= 0 {
			return e[:i] + e[i+1:]
		}
	case 1:
		if i := at('['); i >= 0 {
			return e[:i] + e[i+1:]
		}
	case 2:
		if i := at('-'); i >= 0 {
			return insert(i+1, g.pick([]string{"a", "x", "-", " ", "+", ""}))
		}
	case 3:
		return e + g.pick([]string{"-ib", "]", "[", "[]", "[1,]", "[,2]", "[3-1]", "[0-70000]", "[0-65535]x"})
	case 4:
		if i := at('['); i >= 0 {
			return insert(i+1, g.pick([]string{"[", "+", " ", "-", ",", "a"}))
		}
	case 5:
		if i := at(']'); i >= 0 {
			return insert(i+1, g.pick([]string{"x", "]", "[1]", "-2"}))
		}
	case 6:
		return g.pick([]string{"[", "]", ",", "[1-2", "n1-3]", "a]b[1]"}) + e
	case 7:
		return strings.Replace(e, ",", g.pick([]string{",,", ", ", "[", "]"}), 1)
	case 8:
		return e + "," + g.prefix() + "[" + g.pick([]string{"5-3", "a-b", "1-2-3", "01-0x", "-4", "4-", "0-70", "0-65536"}) + "]"
	}
	return e
}

// hosts makes a host list to compress: names from a few prefixes and
// paddings, runs of consecutive numbers, shuffles and duplicates.
func (g *hostlistGen) hosts() []string {
	var out []string
	prefixes := []string{g.prefix(), g.prefix(), g.prefix()}
	for k := 1 + g.r.IntN(6); k > 0; k-- {
		p := prefixes[g.r.IntN(len(prefixes))]
		pad := g.padding()
		lo := g.r.IntN(130)
		for v := lo; v < lo+1+g.r.IntN(15); v++ {
			if g.r.IntN(5) > 0 {
				out = append(out, p+g.num(v, pad))
			}
		}
		if g.r.IntN(6) == 0 {
			out = append(out, p+"x")
		}
	}
	switch g.r.IntN(4) {
	case 0:
		g.r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	case 1:
		slices.Sort(out)
	}
	if len(out) == 0 {
		out = append(out, "solo")
	}
	return out
}
