package hostlist

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
// it, Expand returns an error instead (Slurm's own behaviour in
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
)

// MaxHostlistHosts is the largest number of hosts Expand returns;
// larger expressions are rejected before any host name is built.
const MaxHostlistHosts = 1 << 20

// Limits that Slurm enforces as well.
const (
	maxRangeHosts  = 64 * 1024  // hosts in one "lo-hi" range
	maxGroupItems  = 256 * 1024 // comma-separated items in one bracket group
	maxOuterValues = 64 * 1024  // values of an earlier bracket group
)

// ErrInvalid is wrapped by every error of Expand.
var ErrInvalid = errors.New("invalid hostlist")

// Error describes why Expand rejected an expression.
type Error struct {
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
func (e *Error) Error() string {
	expr := e.Expr
	if len(expr) > 120 {
		expr = expr[:120] + "..."
	}
	return fmt.Sprintf("slurm: invalid hostlist %q at offset %d: %s", expr, e.Pos, e.Msg)
}

// Is reports whether target is ErrInvalid.
func (e *Error) Is(target error) bool { return target == ErrInvalid }

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
