package record

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// testUID and testGID own the result files of the tests (no such user need exist).
const testUID, testGID = 12345, 12346

func TestWriteJobResultRefuses(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to chown")
	}
	t.Run("a directory of another user", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.Chown(dir, 999, 999); err != nil {
			t.Fatal(err)
		}
		err := WriteJobResult(dir, "vigil-1-n1.json", []byte("{}"), testUID, testGID)
		if !errors.Is(err, ErrResultDir) {
			t.Errorf("err = %v, want ErrResultDir", err)
		}
	})
	t.Run("a link in place of the file is replaced, not followed", func(t *testing.T) {
		dir, victim := t.TempDir(), filepath.Join(t.TempDir(), "victim")
		if err := os.WriteFile(victim, []byte("keep"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(victim, filepath.Join(dir, "vigil-1-n1.json")); err != nil {
			t.Fatal(err)
		}
		if err := WriteJobResult(dir, "vigil-1-n1.json", []byte("{}"), testUID, testGID); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(victim); string(b) != "keep" {
			t.Errorf("the link's target was written: %q", b)
		}
		if fi, _ := os.Lstat(filepath.Join(dir, "vigil-1-n1.json")); fi == nil || !fi.Mode().IsRegular() {
			t.Errorf("the result is not a regular file: %v", fi)
		}
	})
}
