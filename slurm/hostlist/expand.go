package hostlist

// Hostlist expansion: the parser and expander behind Expand. The
// rules it follows are written down in hostlist.go.

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// item is one element of a bracket group: lo..hi, zero padded to width.
type item struct {
	lo, hi uint64
	width  int
}

// expander holds the state of one Expand call.
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

func (x *expander) fail(stricter bool, pos int, format string, args ...any) *Error {
	return &Error{Expr: x.expr, Pos: pos, Msg: fmt.Sprintf(format, args...), stricter: stricter}
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
					var he *Error
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

// Expand expands a Slurm hostlist expression ("gpu[01-04,07],login1")
// into host names, in order and with duplicates, exactly as
// `scontrol show hostnames` of Slurm 22.05 does. Expressions Slurm rejects
// are rejected with a *Error (wrapping ErrInvalid) naming the
// problem and its byte offset; so are the odd ones listed in hostlist.go's
// header comment that Slurm accepts, and those of more than MaxHostlistHosts
// hosts.
func Expand(expr string) ([]string, error) {
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
