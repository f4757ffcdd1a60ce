package kmsg

import (
	"os"
	"path/filepath"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Record
	}{
		{"4,1234,5678900,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.\n SUBSYSTEM=pci\n",
			Record{1234, 5678900, "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus."}},
		{"6,2,300,-,caller=T12;eth0: link up", Record{2, 300, "eth0: link up"}},
		{"Dec  2 10:43:35 gpu02 kernel: a syslog line", Record{Text: "Dec  2 10:43:35 gpu02 kernel: a syslog line"}},
		{"4,99999999999999999999,1,-;saturated", Record{Text: "4,99999999999999999999,1,-;saturated"}},
	} {
		if got := Parse([]byte(tt.in)); got != tt.want {
			t.Errorf("Parse(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

// TestReadAvailable over a regular file: each read(2) returns the whole
// rest, so the first record comes back (a character device returns one
// record per read; the real /dev/kmsg is read by the xid check's tests).
func TestReadAvailableOpenError(t *testing.T) {
	if _, err := Open(filepath.Join(t.TempDir(), "none")); !os.IsNotExist(err) {
		t.Errorf("Open of a missing device: %v", err)
	}
}
