package health

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/internal/pci"
)

// addKmsgSeeds seeds f with each line of the kernel log fixtures (the
// driver's real XID messages, as /dev/kmsg records and as kern.log lines)
// and with the XID lines of TestParseXID.
func addKmsgSeeds(f *testing.F, whole bool) {
	f.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "kmsg", "*"))
	if err != nil || len(files) == 0 {
		f.Fatal("no kernel log fixtures", err)
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		if whole {
			f.Add(b)
			continue
		}
		for _, line := range bytes.SplitAfter(b, []byte{'\n'}) {
			f.Add(line)
		}
	}
	for _, s := range []string{
		"4,2107,733100001,-;NVRM: Xid (PCI:0000:3a:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n",
		"NVRM: Xid (PCI:0000:01:00.0): 13, Graphics Exception",
		"4,1,1,-;NVRM: Xid (PCI:0000:5d:00): 74, NVLink: fatal error\n SUBSYSTEM=pci\n",
		"4,18446744073709551616,1,c,more;NVRM: Xid (PCI:000000:5D:00.7): 99999999999999999999, x",
		"Nov 29 16:01:03 n7 kernel: [ 11.0] NVRM: Xid (PCI:0000:2a:00): 95,",
	} {
		f.Add([]byte(s))
	}
}

// FuzzParseXID reads a kernel log record (a /dev/kmsg read or a line of a
// text log) and looks for an XID in it. The message is one line; a kmsg
// sequence number is the record's; an XID event has a normalised PCI
// address and a trimmed text, and the driver's message written back from
// the event reads back as the same event.
func FuzzParseXID(f *testing.F) {
	addKmsgSeeds(f, false)
	f.Fuzz(func(t *testing.T, b []byte) {
		l := parseLogLine(b)
		if strings.Contains(l.Text, "\n") {
			t.Fatalf("%q: message spans lines: %q", b, l.Text)
		}
		first, _, _ := bytes.Cut(b, []byte{'\n'})
		if !bytes.HasSuffix(first, []byte(l.Text)) {
			t.Fatalf("%q: message %q is not the end of the first line", b, l.Text)
		}
		if l.Seq != 0 {
			h, _, _ := bytes.Cut(first, []byte{';'})
			if f := bytes.Split(h, []byte{','}); len(f) < 3 || string(f[1]) == "" || parseSeq(f[1]) != l.Seq {
				t.Fatalf("%q: sequence %d is not the record's", b, l.Seq)
			}
		}
		ev, ok := parseXID(l)
		if !ok {
			return
		}
		if ev.Code < 0 || ev.Seq != l.Seq || ev.Text != strings.TrimSpace(ev.Text) ||
			ev.PCI != pci.Normalise(ev.PCI) || ev.PCI != strings.ToLower(ev.PCI) {
			t.Fatalf("%q: event %+v", b, ev)
		}
		rec := fmt.Sprintf("4,%d,%d,-;NVRM: Xid (PCI:%s): %d, %s\n", ev.Seq, l.Usec, ev.PCI, ev.Code, ev.Text)
		if again, ok := parseXID(parseLogLine([]byte(rec))); !ok || again != ev {
			t.Fatalf("%+v written as %q reads back as %+v, %v", ev, rec, again, ok)
		}
	})
}

func parseSeq(b []byte) uint64 {
	n, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		return 1<<64 - 1
	}
	return n
}

// FuzzReadLogFile reads a text kernel log as the xid check does, all at
// once and then again from a line boundary: it returns every complete line
// but kmsg continuation lines, stops after the last newline (an unfinished
// line is read next time), and reading on from an offset it returned gives
// the rest of the same lines.
func FuzzReadLogFile(f *testing.F) {
	addKmsgSeeds(f, true)
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "kern.log")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		all, off, id, err := readLogFile(path, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		want := int64(bytes.LastIndexByte(data, '\n') + 1)
		if off != want || id.size != int64(len(data)) {
			t.Fatalf("offset %d, size %d; want %d, %d", off, id.size, want, len(data))
		}
		var texts []string
		var bounds []int64
		pos := int64(0)
		for _, line := range bytes.SplitAfter(data[:off], []byte{'\n'}) {
			if len(line) == 0 {
				continue
			}
			if line[0] != ' ' {
				texts = append(texts, parseLogLine(line).Text)
				bounds = append(bounds, pos)
			}
			pos += int64(len(line))
		}
		got := make([]string, len(all))
		for i, l := range all {
			got[i] = l.Text
		}
		if !slices.Equal(got, texts) {
			t.Fatalf("read %q, want %q", got, texts)
		}
		if len(bounds) == 0 {
			return
		}
		// Resume at the middle line, as the next run does after a position
		// saved with this file's inode.
		k := len(bounds) / 2
		rest, off2, _, err := readLogFile(path, bounds[k], id.inode)
		if err != nil || off2 != off || len(rest) != len(all)-k {
			t.Fatalf("from %d: %d lines to %d, %v; want %d lines to %d", bounds[k], len(rest), off2, err, len(all)-k, off)
		}
		for i, l := range rest {
			if l != all[k+i] {
				t.Fatalf("from %d: line %d is %+v, want %+v", bounds[k], i, l, all[k+i])
			}
		}
		// A position beyond the end (the log was truncated) starts over.
		if again, _, _, err := readLogFile(path, int64(len(data))+1, id.inode); err != nil || len(again) != len(all) {
			t.Fatalf("after truncation: %d lines, %v; want %d", len(again), err, len(all))
		}
	})
}
