package kmsg

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestParse(t *testing.T) {
	const xid79 = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus."
	for _, tt := range []struct {
		in   string
		want Record
	}{
		{"4,1234,5678900,-;" + xid79 + "\n SUBSYSTEM=pci\n", Record{Seq: 1234, Usec: 5678900, Text: xid79}},
		{"6,2,300,-,caller=T12;eth0: link up", Record{Seq: 2, Usec: 300, Text: "eth0: link up"}},
		// Written to /dev/kmsg from user space: the kernel gives it LOG_USER
		// (8+level) or the writer's facility, never the kernel's 0.
		{"12,7,400,-;" + xid79, Record{Seq: 7, Usec: 400, Text: xid79, User: true}},
		{"30,8,401,-;systemd[1]: Started session-3.scope.", Record{Seq: 8, Usec: 401, Text: "systemd[1]: Started session-3.scope.", User: true}},
		{"Dec  2 10:43:35 gpu02 kernel: a syslog line", Record{Text: "a syslog line", Plain: true}},
		{"Nov 29 14:55:40 n7 kernel: [ 3240.118812] " + xid79, Record{Text: xid79, Plain: true}},
		{"2024-11-29T14:55:40.123456+00:00 n7 kernel: " + xid79, Record{Text: xid79, Plain: true}},
		{"Nov 29 14:55:40 n7 logger[811]: " + xid79, Record{Text: xid79, User: true, Plain: true}},
		{"Nov 29 14:55:40 n7 python: " + xid79, Record{Text: xid79, User: true, Plain: true}},
		// The segfault line keeps its start: the forged XID is inside it.
		{"Nov 29 14:55:40 n7 kernel: crash[9]: segfault at 0 ip 0 sp 0 error 4 in kernel: " + xid79 + "[1+1]",
			Record{Text: "crash[9]: segfault at 0 ip 0 sp 0 error 4 in kernel: " + xid79 + "[1+1]", Plain: true}},
		// dmesg, with and without -T, and a bare message.
		{"[16450076.435595] " + xid79, Record{Text: xid79, Plain: true}},
		{"[Sat Oct 12 18:35:32 2024] " + xid79, Record{Text: xid79, Plain: true}},
		// dmesg -H/--reltime: the minute, then the time since the previous line.
		{"[Oct12 18:35] " + xid79, Record{Text: xid79, Plain: true}},
		{"[  +0.000316] " + xid79, Record{Text: xid79, Plain: true}},
		{"[ +12.000316] " + xid79, Record{Text: xid79, Plain: true}},
		{"[+0.1] x", Record{Text: "x", Plain: true}},
		{"[Oct12] " + xid79, Record{Text: "[Oct12] " + xid79, Plain: true}},
		{xid79, Record{Text: xid79, Plain: true}},
		{"[drm] Initialized", Record{Text: "[drm] Initialized", Plain: true}},
		{"4,99999999999999999999,1,-;saturated", Record{Text: "4,99999999999999999999,1,-;saturated", Plain: true}},
	} {
		if got := Parse([]byte(tt.in)); got != tt.want {
			t.Errorf("Parse(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

// TestReadAvailableDropsUserRecords over a regular file, which returns
// every record in one read (a character device returns one record per
// read; the real /dev/kmsg is read by the xid check's tests): records
// written from user space are not returned, and the position moves past
// them.
func TestReadAvailableDropsUserRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kmsg")
	dump := "6,10,1,-;eth0: link up\n" +
		"12,11,2,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.\n" +
		"4,12,3,-;NVRM: Xid (PCI:0000:3b:00): 13, pid=1, name=p, Graphics Exception\n" +
		"14,13,4,-;a user's line\n"
	if err := os.WriteFile(path, []byte(dump), 0o644); err != nil {
		t.Fatal(err)
	}
	fd, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	recs, last, err := ReadAvailable(fd, 0, true, 0)
	if err != nil {
		t.Fatal(err)
	}
	if last != 13 || len(recs) != 2 || recs[0].Seq != 10 || recs[1].Seq != 12 {
		t.Errorf("read %+v up to %d; want records 10 and 12, up to 13", recs, last)
	}
}

func TestReadAvailableOpenError(t *testing.T) {
	if _, err := Open(filepath.Join(t.TempDir(), "none")); !os.IsNotExist(err) {
		t.Errorf("Open of a missing device: %v", err)
	}
}
