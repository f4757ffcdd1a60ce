package report

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// The textfile is shared by the prolog, the epilog and health mode: each
// run replaces the series of its own mode and keeps the others', so that
// the epilog a second after the prolog does not hide the prolog's result.
// Writers take an exclusive flock on "<textfile>.lock" (node_exporter reads
// only *.prom files, so it never sees the lock file), read the file, merge
// and rename the new file into place. node_exporter, which takes no lock,
// sees either the old file or the new one, never a half-written one.

// WriteTextfile writes the report's metrics to path (its directory is
// created when missing), keeping the series other modes wrote there.
func WriteTextfile(path string, r *Report) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	unlock, err := lockFile(path + ".lock")
	if err != nil {
		return err
	}
	defer unlock()
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("report: reading the textfile: %w", err)
	}
	return WriteAtomic(path, MergeTextfile(old, r), 0o644)
}

// MergeTextfile returns the textfile old with the series of r's mode
// replaced by r's. Of old it keeps only the sample lines vigil writes: a
// known family, a mode label first, a number. Comments, foreign series,
// lines without a mode (the format before modes were kept apart) and
// broken lines are dropped, so that one bad line, which makes
// node_exporter drop the whole file, does not outlive the next run.
func MergeTextfile(old []byte, r *Report) []byte {
	byMode := parseTextfile(old)
	byMode[r.Mode] = seriesOf(r)
	return render(byMode)
}

// sampleLine is a sample line as vigil writes it: a family name, the mode
// label first, more labels with escaped values, and a value.
var sampleLine = regexp.MustCompile(`^([a-z_]+)\{mode="((?:\\[\\"n]|[^"\\\n])*)"((?:,[a-zA-Z_][a-zA-Z0-9_]*="(?:\\[\\"n]|[^"\\\n])*")*)\} (\S+)$`)

// parseTextfile reads vigil's sample lines by mode and family.
func parseTextfile(b []byte) map[string]series {
	byMode := map[string]series{}
	known := MetricNames()
	for _, line := range strings.Split(string(b), "\n") {
		m := sampleLine.FindStringSubmatch(line)
		if m == nil || !slices.Contains(known, m[1]) {
			continue
		}
		if _, err := strconv.ParseFloat(m[4], 64); err != nil {
			continue
		}
		mode := unescapeLabel(m[2])
		if byMode[mode] == nil {
			byMode[mode] = series{}
		}
		byMode[mode][m[1]] = append(byMode[mode][m[1]], line)
	}
	return byMode
}

var labelUnescaper = strings.NewReplacer(`\\`, `\`, `\"`, `"`, `\n`, "\n")

func unescapeLabel(s string) string { return labelUnescaper.Replace(s) }

// lockFile takes an exclusive flock on path (created when missing) and
// returns its release. The lock file stays: removing it would let two
// writers lock two different files.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("report: textfile lock: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("report: textfile lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}
