package kmsg

import (
	"strings"
	"testing"
)

// FuzzParse: any record or line (a user decides much of a segfault line's
// text) parses without a panic; a record's text is what follows its
// header, a text line's is within the line, and no record is both a
// /dev/kmsg record and a text line.
func FuzzParse(f *testing.F) {
	f.Add([]byte("6,1022,11234890,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus."))
	f.Add([]byte("6,1023,11234891,-;crash[32060]: segfault at 0 ip 0 sp 0 error 4 in NVRM: Xid (PCI:0000:ff:00): 79[400000+1000]"))
	f.Add([]byte("14,5,100,-;user space says hello"))
	f.Add([]byte("Nov 29 10:00:00 gpu01 kernel: [ 3240.118812] NVRM: Xid (PCI:0000:3b:00): 79, pid=1"))
	f.Add([]byte("Nov 29 10:00:00 gpu01 myprog[12]: NVRM: Xid (PCI:0000:3b:00): 79"))
	f.Add([]byte("99999999999999999999999,1,1,-;x"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := Parse(b)
		line := string(b)
		if i := strings.IndexByte(line, '\n'); i >= 0 {
			line = line[:i]
		}
		if !strings.Contains(line, r.Text) {
			t.Fatalf("text %q is not part of the line %q", r.Text, line)
		}
		if !r.Plain && (r.Seq == 0 && r.Usec == 0 && !strings.Contains(line, ";")) {
			t.Fatalf("a record without a header: %+v from %q", r, line)
		}
	})
}
