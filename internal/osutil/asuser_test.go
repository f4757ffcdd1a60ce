package osutil

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestWriteFileAsUser: the kernel decides as it would for the user
// (nobody): a root directory is refused and left empty, the user's own
// gets the file, theirs from creation; and the rest of the process keeps
// root's credentials afterwards.
func TestWriteFileAsUser(t *testing.T) {
	state := openState(t) // a root directory every user can reach, 0755
	err := WriteFileAsUser(state, "r.json", []byte("{}"), 0o644, 65534, 65534)
	if !errors.Is(err, ErrNotPermitted) || !errors.Is(err, syscall.EACCES) {
		t.Fatalf("root's directory: %v, want ErrNotPermitted (EACCES)", err)
	}
	if ents, _ := os.ReadDir(state); len(ents) != 0 {
		t.Fatalf("written into root's directory: %v", ents)
	}
	theirs := filepath.Join(state, "theirs")
	if err := os.Mkdir(theirs, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(theirs, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	for range 3 { // a second write replaces the first
		if err := WriteFileAsUser(theirs, "r.json", []byte("{}\n"), 0o644, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Lstat(filepath.Join(theirs, "r.json"))
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != 65534 || st.Gid != 65534 || fi.Mode().Perm() != 0o644 {
		t.Errorf("file %v %d:%d, want -rw-r--r-- 65534:65534", fi.Mode(), st.Uid, st.Gid)
	}
	if ents, _ := os.ReadDir(theirs); len(ents) != 1 {
		t.Errorf("left behind: %v", ents)
	}
	// Root's own writes still work where only root may write.
	private := filepath.Join(t.TempDir(), "private")
	if err := os.Mkdir(private, 0o700); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		if err := os.WriteFile(filepath.Join(private, "x"), nil, 0o600); err != nil {
			t.Fatalf("root lost its credentials: %v", err)
		}
	}
}
