package report

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Each mode writes its own textfile, TextfileName(mode), in node_exporter's
// textfile directory: the collector reads every *.prom file there and
// serves them together, so the prolog, the epilog and health mode never
// touch each other's file and need no lock. A run replaces its file
// atomically (WriteAtomic: temp file in the same directory, fsync, rename);
// node_exporter sees the old file or the new one, never a half-written one,
// and never the temp file, whose name does not end in ".prom".

// SharedTextfileName is the one textfile that the prolog, the epilog and
// health mode shared before each mode had its own. RemoveSharedTextfile
// removes it.
const SharedTextfileName = "vigil.prom"

// TextfileName is the name of the textfile that runs of mode write.
func TextfileName(mode string) string { return "vigil-" + mode + ".prom" }

// ErrTextfileMode is returned for a mode that cannot name a textfile.
var ErrTextfileMode = errors.New("report: mode cannot name a textfile")

// WriteTextfile writes the report's metrics, its mode's series and nothing
// else, to TextfileName(r.Mode) in dir (created when missing) and returns
// the file's path. The file is replaced atomically; on error the old file
// stays as it was and no temp file is left.
func WriteTextfile(dir string, r *Report) (string, error) {
	if r.Mode == "" || strings.ContainsAny(r.Mode, "/\x00") {
		return "", fmt.Errorf("%w: %q", ErrTextfileMode, r.Mode)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("report: %w", err)
	}
	path := filepath.Join(dir, TextfileName(r.Mode))
	var b bytes.Buffer
	if err := Prometheus(&b, r); err != nil {
		return "", err
	}
	if err := WriteAtomic(path, b.Bytes(), 0o644); err != nil {
		return "", err
	}
	return path, nil
}

// RemoveSharedTextfile removes path, a shared textfile left over from the
// versions before each mode had its own, and its "<path>.lock", and says
// whether it removed the textfile. Left in place, its series would stay
// next to the modes' own files for good, the same series twice (which
// makes node_exporter reject the scrape) or frozen at their last value.
// Only a file that holds vigil's lines alone is removed: a file another
// program wrote under that name is left alone. A missing file is no error.
func RemoveSharedTextfile(path string) (bool, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("report: the shared textfile of earlier versions: %w", err)
	}
	if !onlyVigilLines(b) {
		return false, nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("report: removing the shared textfile of earlier versions: %w", err)
	}
	if err := os.Remove(path + ".lock"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return true, fmt.Errorf("report: removing the shared textfile's lock: %w", err)
	}
	return true, nil
}

// onlyVigilLines reports whether b is a textfile that vigil wrote: some
// lines, each a HELP or TYPE comment of a vigil family or a vigil sample.
func onlyVigilLines(b []byte) bool {
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, len(b)+1)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		if !strings.HasPrefix(line, "# HELP vigil_") && !strings.HasPrefix(line, "# TYPE vigil_") && !strings.HasPrefix(line, "vigil_") {
			return false
		}
		n++
	}
	return sc.Err() == nil && n > 0
}
