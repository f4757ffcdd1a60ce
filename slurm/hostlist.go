package slurm

// Hostlist expansion and compression that agree with `scontrol show
// hostnames` and `scontrol show hostlist` of Slurm 22.05 (one-dimensional
// clusters).
//
// The rules, in short:
//
//   - An expression is split into tokens at commas, spaces and tabs, except
//     inside brackets: "n[1-3,7]" is one token.
//   - The last bracket group of a token holds a comma-separated list of
//     numbers and ranges ("1-3", "07"); each one is zero padded to the length
//     of its lower bound as written ("n[01-10]" gives n01 ... n10, while
//     "n[1-010]" gives n1 ... n10). Nothing may follow that last group.
//   - Earlier groups in the same token multiply out: every value of the
//     second-to-last group is written into the name, the earlier groups are
//     expanded again for each of those values, and the last group varies
//     fastest. With two groups that is plain row-major order
//     ("r[1-2]n[1-2]" = r1n1 r1n2 r2n1 r2n2); with three groups
//     "a[1-2]b[3-4]c[5-6]" gives a1b3c5 a1b3c6 a2b3c5 a2b3c6 a1b4c5 ...
//   - A range may hold at most 65536 hosts, and each earlier group at most
//     65536 values in all.
//   - Order and duplicates are kept as written.
//
// Where Slurm accepts something that is not a usable host list, or fails on
// it, ExpandHostlist returns an error instead (Slurm's own behaviour in
// brackets):
//
//   - an empty expression, or one of separators only (no hosts, no error);
//   - a '[' with no ']' after it ("n[1-3" gives the host "n]");
//   - text between a range's lower bound and its dash ("n[1a-3]" and
//     "n[1.5-3]" give n01-n03 and n001-n003, "n[1 -3]" n01-n03);
//   - a host name that would be empty or contain '[', ']', ',' or white
//     space ("n1]", "a]b[1-2]", "a\nb1"; Slurm prints such names as they are,
//     and may even merge "ab1,a\nb2" into ab1,ab2);
//   - an invalid range in an earlier bracket group of a token with three or
//     more groups (Slurm logs the error, drops those hosts and carries on),
//     and an earlier group of more than 65536 values in such a
//     token (Slurm drops hosts silently);
//   - a number of 18446744073709551615 (2^64-1) or more, also where digits
//     before a group make a name's number that large ("2000[00000000000000]")
//     (Slurm saturates such numbers, prints a different name, and crashes or
//     loops on ranges that reach them);
//   - more than MaxHostlistHosts hosts in all (Slurm has no overall limit);
//   - a NUL byte (a C string ends there).
//
// Compression, in short: each name is split into a prefix and a trailing
// number (with the number's width as written). A name continues the run
// before it when the prefix is the same, the number is the next one, and
// one zero-padding width prints both the run's first number and the new
// number as written. Neighbouring runs with the same prefix share one
// bracket group.

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// MaxHostlistHosts is the largest number of hosts ExpandHostlist returns;
// larger expressions are rejected before any host name is built.
const MaxHostlistHosts = 1 << 20

// Limits that Slurm enforces as well.
const (
	maxRangeHosts  = 64 * 1024  // hosts in one "lo-hi" range
	maxGroupItems  = 256 * 1024 // comma-separated items in one bracket group
	maxOuterValues = 64 * 1024  // values of an earlier bracket group
)

// ErrInvalidHostlist is wrapped by every error of ExpandHostlist.
var ErrInvalidHostlist = errors.New("invalid hostlist")

// HostlistError describes why ExpandHostlist rejected an expression.
type HostlistError struct {
	Expr string // the expression as given
	Pos  int    // byte offset in Expr where the problem was found
	Msg  string // what is wrong

	// stricter is true where Slurm itself accepts the expression (see the
	// comment at the top of this file); the comparison test with scontrol
	// uses it.
	stricter bool
	// groupTooLarge marks an earlier bracket group of more than
	// maxOuterValues values, which Slurm ignores silently when it is not
	// the second-to-last group of its token.
	groupTooLarge bool
}

// Error implements error.
func (e *HostlistError) Error() string {
	expr := e.Expr
	if len(expr) > 120 {
		expr = expr[:120] + "..."
	}
	return fmt.Sprintf("slurm: invalid hostlist %q at offset %d: %s", expr, e.Pos, e.Msg)
}

// Is reports whether target is ErrInvalidHostlist.
func (e *HostlistError) Is(target error) bool { return target == ErrInvalidHostlist }

// hostRun is a run of host names: prefix followed by each number lo..hi,
// zero padded to width; or, when single is set, the one name prefix, which
// has no trailing number.
type hostRun struct {
	prefix string
	lo, hi uint64
	width  int
	single bool
}

// size is the number of hosts in r.
func (r *hostRun) size() uint64 {
	if r.single {
		return 1
	}
	return r.hi - r.lo + 1
}

// hlHostRange splits a host name into a one-host run: a trailing run of
// digits is the number (saturating at 2^64-1), the rest the prefix.
func hlHostRange(name string) hostRun {
	i := len(name)
	for i > 0 && isDigit(name[i-1]) {
		i--
	}
	if i == len(name) {
		return hostRun{prefix: name, single: true}
	}
	v := parseDigits(name[i:])
	return hostRun{prefix: name[:i], lo: v, hi: v, width: len(name) - i}
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// isSeparator reports whether c ends a token (outside brackets).
func isSeparator(c byte) bool { return c == ',' || c == ' ' || c == '\t' }

func isBlank(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// parseDigits reads a string of decimal digits, saturating at 2^64-1.
func parseDigits(s string) uint64 {
	var v uint64
	for i := 0; i < len(s); i++ {
		d := uint64(s[i] - '0')
		if v > (math.MaxUint64-d)/10 {
			return math.MaxUint64
		}
		v = v*10 + d
	}
	return v
}

// scanNumber reads a number the way bracket items are read: optional
// leading white space, an optional sign ('-' negates modulo 2^64), then
// decimal digits, saturating at 2^64-1. n is the number of bytes read;
// ok is false when there are no digits.
func scanNumber(s string) (v uint64, n int, ok bool) {
	i := 0
	for i < len(s) && isBlank(s[i]) {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	start := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	if i == start {
		return 0, 0, false
	}
	v = parseDigits(s[start:i])
	if neg && v != math.MaxUint64 {
		v = -v
	}
	return v, i, true
}

// numDigits is the number of decimal digits of v.
func numDigits(v uint64) int {
	n := 1
	for ; v >= 10; v /= 10 {
		n++
	}
	return n
}

// padZeros is the number of zeros that pad v to width.
func padZeros(v uint64, width int) int {
	return max(width-numDigits(v), 0)
}

// appendPadded appends v in decimal, zero padded to width.
func appendPadded(b []byte, v uint64, width int) []byte {
	for n := padZeros(v, width); n > 0; n-- {
		b = append(b, '0')
	}
	return strconv.AppendUint(b, v, 10)
}

// item is one element of a bracket group: lo..hi, zero padded to width.
type item struct {
	lo, hi uint64
	width  int
}

// expander holds the state of one ExpandHostlist call.
type expander struct {
	expr  string
	runs  []hostRun
	total uint64

	// Positions of the next '[' and ']'; token scanning only moves forward,
	// so each is searched for once per occurrence.
	open, close finder
}

// finder finds the first occurrence of c at or after an offset in s,
// remembering its last answer.
type finder struct {
	s        string
	c        byte
	from, at int // last query and answer (-1: none)
}

func newFinder(s string, c byte) finder { return finder{s: s, c: c, from: -1} }

func (f *finder) next(from int) int {
	if f.from >= 0 && f.from <= from && (f.at < 0 || f.at >= from) {
		return f.at
	}
	at := strings.IndexByte(f.s[from:], f.c)
	if at >= 0 {
		at += from
	}
	f.from, f.at = from, at
	return at
}

func (x *expander) fail(stricter bool, pos int, format string, args ...any) *HostlistError {
	return &HostlistError{Expr: x.expr, Pos: pos, Msg: fmt.Sprintf(format, args...), stricter: stricter}
}

// nextToken finds the token at or after pos: a stretch of non-separators,
// stretched over separators where a '[' in it has its ']' further on. It
// returns the token's bounds and where to look for the next one; ok is
// false when only separators are left.
func (x *expander) nextToken(pos int) (start, end, next int, ok bool) {
	s := x.expr
	for pos < len(s) && isSeparator(s[pos]) {
		pos++
	}
	if pos == len(s) {
		return 0, 0, pos, false
	}
	start = pos
	end = pos   // the token reaches at least here
	seen := pos // brackets before this offset are accounted for
	for {
		for end < len(s) && !isSeparator(s[end]) {
			end++
		}
		stretched := false
		for {
			o := x.open.next(seen)
			if o < 0 || o > end {
				break
			}
			c := x.close.next(seen)
			if c < 0 || c < o {
				// A ']' before the '[' (or none at all): no stretching.
				break
			}
			if c < end {
				seen = c + 1
				continue
			}
			end, stretched = c, true
			break
		}
		if !stretched {
			break
		}
	}
	next = end
	for next < len(s) && isSeparator(s[next]) {
		next++
	}
	return start, end, next, true
}

// parseGroup parses the items of a bracket group; pos is the offset of
// text in the expression.
func (x *expander) parseGroup(text string, pos int) ([]item, error) {
	var items []item
	for {
		if len(items) == maxGroupItems {
			return nil, x.fail(false, pos, "more than %d ranges in one bracket group", maxGroupItems)
		}
		elem, rest, more := strings.Cut(text, ",")
		it, err := x.parseItem(elem, pos)
		if err != nil {
			return nil, err
		}
		items = append(items, it)
		if !more {
			return items, nil
		}
		text = rest
		pos += len(elem) + 1
	}
}

// parseItem parses "N", "N-M" or "N-" (which is N); the width is the
// length of N as written.
func (x *expander) parseItem(elem string, pos int) (item, error) {
	bad := func(why string) (item, error) {
		return item{}, x.fail(false, pos, "invalid range %q: %s", elem, why)
	}
	if strings.IndexByte(elem, 'x') >= 0 {
		return bad("'x' is not allowed")
	}
	loText, hiText, isRange := strings.Cut(elem, "-")
	if isRange && strings.HasPrefix(hiText, "-") {
		return bad("negative number")
	}
	lo, n, ok := scanNumber(loText)
	switch {
	case !ok && elem == "":
		return bad("empty")
	case !ok && loText == "":
		return bad("missing lower bound")
	case !ok:
		return bad("not a number")
	case isRange && n != len(loText):
		// Slurm ignores this ("1a-3" is 01-03); the range is surely a typo.
		return item{}, x.fail(true, pos, "invalid range %q: junk after lower bound", elem)
	case !isRange && n != len(loText):
		return bad("junk after number")
	}
	hi := lo
	if isRange && hiText != "" {
		hi, n, ok = scanNumber(hiText)
		if !ok {
			return bad("upper bound is not a number")
		}
		if n != len(hiText) {
			return bad("junk after upper bound")
		}
	}
	if lo > hi {
		return bad("lower bound above upper bound")
	}
	if count := hi - lo + 1; count > maxRangeHosts && count != 0 {
		return item{}, x.fail(false, pos, "too many hosts in range %q (Slurm's limit is %d)", elem, maxRangeHosts)
	}
	if hi == math.MaxUint64 {
		return item{}, x.fail(true, pos, "number too large in range %q (largest allowed is %d)", elem, uint64(math.MaxUint64-1))
	}
	return item{lo: lo, hi: hi, width: len(loText)}, nil
}

// add appends a run after checking the names it stands for; pos is the
// offset of its token.
func (x *expander) add(r hostRun, pos int) error {
	if r.single && r.prefix == "" {
		return x.fail(true, pos, "empty host name")
	}
	if i := strings.IndexAny(r.prefix, "[],\t\n\v\f\r "); i >= 0 {
		name := r.prefix
		if !r.single {
			name = string(appendPadded([]byte(r.prefix), r.lo, r.width))
		}
		return x.fail(true, pos, "host name %q contains %q", name, r.prefix[i])
	}
	if n := len(r.prefix); !r.single && n > 0 && isDigit(r.prefix[n-1]) {
		// Digits before a group join the number when the name is read
		// back ("p1[1-2]" is p11, p12); keep that number in range too.
		d := n
		for d > 0 && isDigit(r.prefix[d-1]) {
			d--
		}
		largest := appendPadded([]byte(r.prefix), r.hi, r.width)
		if parseDigits(string(largest[d:])) == math.MaxUint64 {
			return x.fail(true, pos, "number in host name %q too large (largest allowed is %d)",
				string(largest), uint64(math.MaxUint64-1))
		}
	}
	if x.total+r.size() > MaxHostlistHosts {
		return x.fail(true, pos, "more than %d hosts", MaxHostlistHosts)
	}
	x.runs = append(x.runs, r)
	x.total += r.size()
	return nil
}

// addGroups adds the hosts of prefix followed by each of last. prefix may
// hold earlier bracket groups: the last of them is written out value by
// value, and what is before it is expanded again for each value. pos is
// the offset of the token, whose text starts every prefix seen here up to
// the group being written out.
func (x *expander) addGroups(prefix string, pos int, last []item) error {
	open := strings.LastIndexByte(prefix, '[')
	if open < 0 || strings.IndexByte(prefix[open:], ']') < 0 {
		for _, it := range last {
			if err := x.add(hostRun{prefix: prefix, lo: it.lo, hi: it.hi, width: it.width}, pos); err != nil {
				return err
			}
		}
		return nil
	}
	close := open + strings.LastIndexByte(prefix[open:], ']')
	before, inner, after := prefix[:open], prefix[open+1:close], prefix[close+1:]
	nested := strings.IndexByte(before, '[') >= 0
	values, err := x.parseGroup(inner, pos+open+1)
	if err != nil {
		return err
	}
	var seen uint64
	name := make([]byte, 0, len(prefix)+20)
	for _, v := range values {
		seen += v.hi - v.lo + 1
		if seen > maxOuterValues {
			e := x.fail(false, pos+open, "more than %d values in bracket group %q", maxOuterValues, inner)
			e.groupTooLarge = true
			return e
		}
		for j := v.lo; ; j++ {
			name = append(appendPadded(append(name[:0], before...), j, v.width), after...)
			if nested {
				if err := x.addGroups(string(name), pos, last); err != nil {
					// Slurm reports a bad range in a deeper group and
					// drops those hosts; an over-long one it drops
					// silently.
					var he *HostlistError
					if errors.As(err, &he) && he.groupTooLarge {
						he.stricter = true
					}
					return err
				}
			} else {
				np := string(name)
				for _, it := range last {
					if err := x.add(hostRun{prefix: np, lo: it.lo, hi: it.hi, width: it.width}, pos); err != nil {
						return err
					}
				}
			}
			if j == v.hi {
				break
			}
		}
	}
	return nil
}

// addToken adds the hosts of the token expr[start:end].
func (x *expander) addToken(start, end int) error {
	tok := x.expr[start:end]
	open := strings.LastIndexByte(tok, '[')
	if open < 0 {
		r := hlHostRange(tok)
		if !r.single && r.hi == math.MaxUint64 {
			return x.fail(true, start, "number in host name %q too large (largest allowed is %d)", tok, uint64(math.MaxUint64-1))
		}
		return x.add(r, start)
	}
	body := tok[open+1:]
	close := strings.IndexByte(body, ']')
	if close < 0 {
		return x.fail(true, start+open, "'[' without ']'")
	}
	if close+1 < len(body) && body[close+1] != ',' {
		return x.fail(false, start+open+1+close+1,
			"unexpected %q after ']' (nothing may follow a token's last bracket group)", body[close+1:])
	}
	last, err := x.parseGroup(body[:close], start+open+1)
	if err != nil {
		return err
	}
	return x.addGroups(tok[:open], start, last)
}

// ExpandHostlist expands a Slurm hostlist expression ("gpu[01-04,07],login1")
// into host names, in order and with duplicates, exactly as
// `scontrol show hostnames` of Slurm 22.05 does. Expressions Slurm rejects
// are rejected with a *HostlistError (wrapping ErrInvalidHostlist) naming the
// problem and its byte offset; so are the odd ones listed in hostlist.go's
// header comment that Slurm accepts, and those of more than MaxHostlistHosts
// hosts.
func ExpandHostlist(expr string) ([]string, error) {
	x := &expander{expr: expr, open: newFinder(expr, '['), close: newFinder(expr, ']')}
	if i := strings.IndexByte(expr, 0); i >= 0 {
		return nil, x.fail(true, i, "NUL byte")
	}
	for pos := 0; ; {
		start, end, next, ok := x.nextToken(pos)
		if !ok {
			break
		}
		if err := x.addToken(start, end); err != nil {
			return nil, err
		}
		pos = next
	}
	if x.total == 0 {
		return nil, x.fail(true, 0, "no host names")
	}
	return x.names(), nil
}

// names writes out the host names of all runs. They are cut from one
// string to keep allocations low.
func (x *expander) names() []string {
	size := 0
	for i := range x.runs {
		r := &x.runs[i]
		w := 0
		if !r.single {
			w = max(r.width, numDigits(r.hi))
		}
		size += int(r.size()) * (len(r.prefix) + w)
	}
	var sb strings.Builder
	sb.Grow(size)
	ends := make([]int, 0, x.total)
	var num []byte
	for i := range x.runs {
		r := &x.runs[i]
		sb.WriteString(r.prefix)
		if r.single {
			ends = append(ends, sb.Len())
			continue
		}
		for v := r.lo; ; v++ {
			if v != r.lo {
				sb.WriteString(r.prefix)
			}
			num = appendPadded(num[:0], v, r.width)
			sb.Write(num)
			ends = append(ends, sb.Len())
			if v == r.hi {
				break
			}
		}
	}
	all := sb.String()
	hosts := make([]string, len(ends))
	prev := 0
	for i, e := range ends {
		hosts[i] = all[prev:e]
		prev = e
	}
	return hosts
}

// CompressHostlist compresses host names into a hostlist expression exactly
// as `scontrol show hostlist` does for the names joined with commas: order
// and duplicates are kept ("n3,n1,n2,n2" gives "n[3,1-2,2]"), consecutive
// numbers with the same prefix and compatible zero padding become ranges,
// and neighbouring ranges with the same prefix share one bracket group.
// Empty names are skipped. Each name is taken as one host name: for names
// holding '[', ',', spaces or tabs the result differs from scontrol's, which
// would parse them as expressions. Two names that differ only in white space
// are never put into one bracket group (Slurm's prefix comparison ignores
// white space), and a number of 2^64-1 or more never continues into 0
// (Slurm's counter wraps there and drops the name); ExpandHostlist yields no
// such names.
func CompressHostlist(hosts []string) string {
	runs := make([]hostRun, 0, len(hosts))
	size := 0
	for _, h := range hosts {
		if h == "" {
			continue
		}
		size += len(h) + 1
		r := hlHostRange(h)
		if n := len(runs); n > 0 && extendRun(&runs[n-1], r) {
			continue
		}
		runs = append(runs, r)
	}
	b := make([]byte, 0, size)
	for i := 0; i < len(runs); {
		if i > 0 {
			b = append(b, ',')
		}
		// Runs i..j-1 share a prefix and one bracket group.
		j := i + 1
		for j < len(runs) && sameGroup(&runs[j-1], &runs[j]) {
			j++
		}
		bracket := j > i+1 || runs[i].size() > 1
		b = append(b, runs[i].prefix...)
		if bracket {
			b = append(b, '[')
		}
		for k := i; k < j; k++ {
			r := &runs[k]
			if k > i {
				b = append(b, ',')
			}
			if r.single {
				continue
			}
			b = appendPadded(b, r.lo, r.width)
			if r.lo < r.hi {
				b = appendPadded(append(b, '-'), r.hi, r.width)
			}
		}
		if bracket {
			b = append(b, ']')
		}
		i = j
	}
	return string(b)
}

// sameGroup reports whether numbered runs a and b go into one bracket group.
func sameGroup(a, b *hostRun) bool {
	return !a.single && !b.single && a.prefix == b.prefix
}

// extendRun adds the one-host run h to r if h's number follows r's and one
// padding width prints r's first number and h's number as written; r then
// takes that width.
func extendRun(r *hostRun, h hostRun) bool {
	if !sameGroup(r, &h) || r.hi == math.MaxUint64 || r.hi+1 != h.lo {
		return false
	}
	switch {
	case r.width == h.width, padZeros(h.lo, r.width) == padZeros(h.lo, h.width):
		// r's width suits h's number too.
	case padZeros(r.lo, h.width) == padZeros(r.lo, r.width):
		r.width = h.width
	default:
		return false
	}
	r.hi = h.lo
	return true
}
