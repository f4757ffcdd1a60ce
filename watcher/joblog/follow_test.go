package joblog

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

func poll(t *testing.T, f *Follower, want ...string) {
	t.Helper()
	got, err := f.Poll()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Poll: got %q, want %q", got, want)
	}
}

// TestFollower follows a real file: complete lines only, from the saved
// offset, across truncation and rotation.
func TestFollower(t *testing.T) {
	path := filepath.Join(t.TempDir(), "slurm-77.out")
	f := &Follower{Path: path}
	poll(t, f) // not there yet
	appendTo(t, path, "one\ntwo\r\nthr")
	poll(t, f, "one", "two")
	poll(t, f)
	appendTo(t, path, "ee\n")
	poll(t, f, "three")
	if f.Offset != int64(len("one\ntwo\r\nthree\n")) {
		t.Fatalf("offset %d", f.Offset)
	}
	// A new follower from the saved offset goes on where this one stopped.
	g := &Follower{Path: path, Offset: f.Offset}
	appendTo(t, path, "four\n")
	poll(t, g, "four")
	// Truncated (e.g. `> file`): start again at the beginning.
	if err := os.WriteFile(path, []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	poll(t, g, "a")
	// Rotated: the path names a new file, longer than the offset.
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	appendTo(t, path, "new 1\nnew 2\n")
	poll(t, g, "new 1", "new 2")
}

// TestFollowerBounded: a poll reads at most MaxRead bytes, the rest comes
// later; an overlong line is cut and the rest of it skipped.
func TestFollowerBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "err")
	appendTo(t, path, "aaaa\nbbbb\ncccc\n")
	f := &Follower{Path: path, MaxRead: 8}
	poll(t, f, "aaaa")
	poll(t, f, "bbbb")
	poll(t, f, "cccc")
	poll(t, f)

	long := strings.Repeat("x", MaxLine+100)
	appendTo(t, path, long+"\nafter\n")
	h := &Follower{Path: path, Offset: f.Offset, MaxRead: 1024}
	poll(t, h, long[:1024])
	poll(t, h) // the rest of the long line, skipped
	poll(t, h, "after")

	k := &Follower{Path: path, Offset: f.Offset}
	poll(t, k, long[:MaxLine], "after")
}
