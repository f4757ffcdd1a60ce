package hostlist

// Hostlist compression: Compress. The rules it follows are written
// down in hostlist.go.

import "math"

// Compress compresses host names into a hostlist expression exactly
// as `scontrol show hostlist` does for the names joined with commas: order
// and duplicates are kept ("n3,n1,n2,n2" gives "n[3,1-2,2]"), consecutive
// numbers with the same prefix and compatible zero padding become ranges,
// and neighbouring ranges with the same prefix share one bracket group.
// Empty names are skipped. Each name is taken as one host name: for names
// holding '[', ',', spaces or tabs the result differs from scontrol's, which
// would parse them as expressions. Two names that differ only in white space
// are never put into one bracket group (Slurm's prefix comparison ignores
// white space), and a number of 2^64-1 or more never continues into 0
// (Slurm's counter wraps there and drops the name); Expand yields no
// such names.
func Compress(hosts []string) string {
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
