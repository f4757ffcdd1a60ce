package sanity

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

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
