package lifecycle

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/report"
)

// DefaultStateDir is where vigil remembers, per config file, where the last
// valid config sent its records. VIGIL_STATE_DIR (or Options.StateDir)
// changes it; it cannot be a config key, since it is read when the config
// is broken.
const DefaultStateDir = "/var/lib/vigil"

// EnvStateDir overrides DefaultStateDir.
const EnvStateDir = "VIGIL_STATE_DIR"

// StateFileName is the file in the state directory.
const StateFileName = "record-paths.json"

// RecordPaths are the [prolog] keys that say where a run leaves its
// records: the JSON reports, the Prometheus textfile and the per-job files.
type RecordPaths struct {
	// ReportDir is [prolog] report_dir.
	ReportDir string `json:"report_dir"`
	// Textfile is [prolog] textfile.
	Textfile string `json:"textfile"`
	// RunDir is [prolog] run_dir.
	RunDir string `json:"run_dir"`
	// Since is when a valid config first gave these paths.
	Since time.Time `json:"since"`
}

func (p RecordPaths) same(o RecordPaths) bool {
	return p.ReportDir == o.ReportDir && p.Textfile == o.Textfile && p.RunDir == o.RunDir
}

// recordState is the state file: the record paths of the last valid run,
// per config file (absolute path).
type recordState struct {
	Configs map[string]RecordPaths `json:"configs"`
}

// ErrNoRecordPaths is returned by LastRecordPaths when no valid config was
// seen for the file.
var ErrNoRecordPaths = errors.New("no valid config recorded")

func stateKey(configPath string) string {
	if abs, err := filepath.Abs(configPath); err == nil {
		return abs
	}
	return configPath
}

func readState(file string) (recordState, error) {
	var st recordState
	b, err := os.ReadFile(file)
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("%s: %w", file, err)
	}
	return st, nil
}

// LastRecordPaths returns the record paths that the last valid run with the
// config file configPath used, from the state file in dir. Without one the
// error wraps ErrNoRecordPaths.
func LastRecordPaths(dir, configPath string) (RecordPaths, error) {
	file := filepath.Join(dir, StateFileName)
	st, err := readState(file)
	if errors.Is(err, fs.ErrNotExist) {
		return RecordPaths{}, fmt.Errorf("%w for %s (%s does not exist)", ErrNoRecordPaths, configPath, file)
	}
	if err != nil {
		return RecordPaths{}, fmt.Errorf("%w for %s: %v", ErrNoRecordPaths, configPath, err)
	}
	p, ok := st.Configs[stateKey(configPath)]
	if !ok {
		return RecordPaths{}, fmt.Errorf("%w for %s in %s", ErrNoRecordPaths, configPath, file)
	}
	return p, nil
}

// RememberRecordPaths stores p as the record paths of the valid config
// file configPath in the state file in dir (atomically; only when they
// changed). It returns whether the file was written.
func RememberRecordPaths(dir, configPath string, p RecordPaths, now time.Time) (bool, error) {
	file := filepath.Join(dir, StateFileName)
	st, err := readState(file)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		st = recordState{} // unreadable: start again
	}
	if st.Configs == nil {
		st.Configs = map[string]RecordPaths{}
	}
	key := stateKey(configPath)
	if old, ok := st.Configs[key]; ok && old.same(p) {
		return false, nil
	}
	p.Since = now.UTC()
	st.Configs[key] = p
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return false, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, err
	}
	if err := report.WriteAtomic(file, append(b, '\n'), 0o644); err != nil {
		return false, err
	}
	return true, nil
}

// stateDir is where the record paths of the last valid config are kept.
func (r *run) stateDir() string {
	if r.o.StateDir != "" {
		return r.o.StateDir
	}
	if v, ok := r.o.Lookup(EnvStateDir); ok && v != "" {
		return v
	}
	return DefaultStateDir
}

// rememberRecordPaths notes where this valid config sends the records, for
// runs with a broken config later. Dry runs change nothing.
func (r *run) rememberRecordPaths() {
	if r.o.DryRun {
		return
	}
	p := r.s.Prolog
	if _, err := RememberRecordPaths(r.stateDir(), r.s.Path, RecordPaths{ReportDir: p.ReportDir, Textfile: p.Textfile, RunDir: p.RunDir}, r.o.Now()); err != nil {
		r.log.WithError(err).Warn("remembering where the records go (used when the config is broken)")
	}
}

// useLastRecordPaths points a run with a broken config at the record paths
// of the last valid one (a flag or environment override still wins), or,
// without one, at nothing: then the errors are on stderr only. A broken
// file never sends records anywhere else, not even to the defaults.
func (r *run) useLastRecordPaths() {
	p := &r.s.Prolog
	last, err := LastRecordPaths(r.stateDir(), r.s.Path)
	for key, dst := range map[string]*string{"report_dir": &p.ReportDir, "textfile": &p.Textfile, "run_dir": &p.RunDir} {
		if r.s.Explicit[key] {
			continue // set by flag or environment, not by the broken file
		}
		switch key {
		case "report_dir":
			*dst = last.ReportDir
		case "textfile":
			*dst = last.Textfile
		case "run_dir":
			*dst = last.RunDir
		}
	}
	if err != nil {
		r.note("config invalid and %v: no report or textfile written", err)
		r.log.WithField("config", r.s.Path).WithError(err).Error("INVALID CONFIG: no valid config was seen before, so vigil writes no report or textfile; the errors are on stderr only")
		return
	}
	r.note("config invalid: records go where the valid config of %s said (%s)", last.Since.Format(time.RFC3339), filepath.Join(r.stateDir(), StateFileName))
	r.log.WithFields(logrus.Fields{"config": r.s.Path, "report_dir": p.ReportDir, "textfile": p.Textfile}).
		Error("INVALID CONFIG: recording where the last valid config said")
}
