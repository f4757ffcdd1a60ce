package record

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/config"
	"github.com/vigil-hpc/vigil/lifecycle/settings"
	"github.com/vigil-hpc/vigil/report"
)

// DefaultStateDir is where vigil remembers, per config file, where the last
// valid config sent its records. VIGIL_STATE_DIR (or the run's own state directory)
// changes it; it cannot be a config key, since it is read when the config
// is broken.
const DefaultStateDir = "/var/lib/vigil"

// EnvStateDir overrides DefaultStateDir.
const EnvStateDir = "VIGIL_STATE_DIR"

// StateFileName is the file in the state directory.
const StateFileName = "record-paths.json"

// RecordPaths are the [prolog] keys that say where a run leaves its
// records: the JSON reports, the Prometheus textfiles and the per-job files.
type RecordPaths struct {
	// ReportDir is [prolog] report_dir.
	ReportDir string `json:"report_dir"`
	// TextfileDir is [prolog] textfile_dir.
	TextfileDir string `json:"textfile_dir"`
	// Textfile is the deprecated [prolog] textfile, when the config still
	// sets it: the shared textfile of earlier versions, the one textfile
	// key in the state file they wrote (LastRecordPaths then takes
	// TextfileDir from it).
	Textfile string `json:"textfile,omitempty"`
	// RunDir is [prolog] run_dir.
	RunDir string `json:"run_dir"`
	// Since is when a valid config first gave these paths.
	Since time.Time `json:"since"`
}

func (p RecordPaths) same(o RecordPaths) bool {
	return p.ReportDir == o.ReportDir && p.TextfileDir == o.TextfileDir && p.Textfile == o.Textfile && p.RunDir == o.RunDir
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
	if p.TextfileDir == "" {
		p.TextfileDir = settings.TextfileDirOf(p.Textfile) // written by a version with one shared textfile
	}
	return p, nil
}

// ErrCorruptState is wrapped by the error of RememberRecordPaths when the
// state file could not be read as JSON: it was kept aside (CorruptName)
// with the other configs' entries in it, and a new one was written.
var ErrCorruptState = errors.New("state file corrupt")

// CorruptName is where a corrupt state file is kept aside at now:
// record-paths.json.corrupt-20261130T120000Z.
func CorruptName(file string, now time.Time) string {
	return file + ".corrupt-" + now.UTC().Format("20060102T150405Z")
}

// RememberRecordPaths stores p as the record paths of the valid config
// file configPath in the state file in dir (atomically; only when they
// changed). It returns whether the file was written. A state file that is
// not valid JSON is never overwritten in place: it is renamed to
// CorruptName (the other configs' entries stay in it, for a person to
// restore), a new one holding p is written, and the error, wrapping
// ErrCorruptState, names both; the bool is then true.
func RememberRecordPaths(dir, configPath string, p RecordPaths, now time.Time) (bool, error) {
	file := filepath.Join(dir, StateFileName)
	st, err := readState(file)
	var corrupt error
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		if corrupt = keepAside(file, now, err); !errors.Is(corrupt, ErrCorruptState) {
			return false, corrupt // neither readable nor movable: leave it alone
		}
		st = recordState{}
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
	if err := writeState(dir, file, st); err != nil {
		return false, errors.Join(corrupt, err)
	}
	return true, corrupt
}

// keepAside renames the unreadable state file to CorruptName and returns
// an error wrapping ErrCorruptState that names it, or, when it cannot be
// moved, an error that does not.
func keepAside(file string, now time.Time, readErr error) error {
	aside := CorruptName(file, now)
	if err := os.Rename(file, aside); err != nil {
		return fmt.Errorf("state %v; cannot keep it aside, leaving it alone: %w", readErr, err)
	}
	return fmt.Errorf("%w: %v; kept it aside as %s (the other configs' record paths are in it) and started a new one", ErrCorruptState, readErr, aside)
}

// writeState writes st to file (in dir) atomically.
func writeState(dir, file string, st recordState) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return report.WriteAtomic(file, append(b, '\n'), 0o644)
}

// StateDir is where the record paths of the last valid config (and the
// run's other state) are kept: dir when given, else VIGIL_STATE_DIR from
// lookup, else DefaultStateDir.
func StateDir(dir string, lookup func(string) (string, bool)) string {
	if dir != "" {
		return dir
	}
	if v, ok := lookup(EnvStateDir); ok && v != "" {
		return v
	}
	return DefaultStateDir
}

// RememberSettings notes in the state directory dir where the valid
// config s sends the records, for runs with a broken config later.
func RememberSettings(s *settings.Settings, dir string, now time.Time, log logrus.FieldLogger, note func(format string, args ...any)) {
	p := s.Prolog
	_, err := RememberRecordPaths(dir, s.Path, RecordPaths{ReportDir: p.ReportDir, TextfileDir: p.TextfileDir, Textfile: p.Textfile, RunDir: p.RunDir}, now)
	switch {
	case errors.Is(err, ErrCorruptState):
		note("record paths: %v", err)
		log.WithError(err).Error("CORRUPT STATE FILE: kept aside; restore the other configs' entries from it if they matter")
	case err != nil:
		log.WithError(err).Warn("remembering where the records go (used when the config is broken)")
	}
}

// UseLastRecordPaths points a run with a broken config at the record paths
// of the last valid one (a flag or environment override still wins). A
// broken file never sends reports or per-job files anywhere else, not even
// to the defaults. Without a last valid config (none seen, or the state
// file unreadable) only the mode's Prometheus textfile is written, so that
// vigil_config_valid 0 reaches the alert: see fallbackTextfileDir. dir is
// the state directory, mode the run's.
func UseLastRecordPaths(s *settings.Settings, dir, mode string, log logrus.FieldLogger, note func(format string, args ...any)) {
	p := &s.Prolog
	last, err := LastRecordPaths(dir, s.Path)
	gauge := ""
	if err != nil && !s.TextfileExplicit() {
		// Not p.TextfileDir: a broken [prolog] decodes part way.
		named, value := s.File.Has("prolog.textfile_dir"), ""
		if named {
			value, _ = s.File.String("prolog.textfile_dir")
		} else if s.File.Has("prolog.textfile") {
			named = true
			last.Textfile, _ = s.File.String("prolog.textfile")
			value = settings.TextfileDirOf(last.Textfile)
		}
		gauge = fallbackTextfileDir(named, value, config.DefaultProlog().TextfileDir)
		last.TextfileDir = gauge
	}
	for key, dst := range map[string]*string{"report_dir": &p.ReportDir, "run_dir": &p.RunDir} {
		if s.Explicit[key] {
			continue // set by flag or environment, not by the broken file
		}
		switch key {
		case "report_dir":
			*dst = last.ReportDir
		case "run_dir":
			*dst = last.RunDir
		}
	}
	if !s.TextfileExplicit() {
		p.TextfileDir, p.Textfile = last.TextfileDir, last.Textfile
	}
	if err != nil {
		noteNoRecordPaths(s.Path, mode, err, gauge, log, note)
		return
	}
	note("config invalid: records go where the valid config of %s said (%s)", last.Since.Format(time.RFC3339), filepath.Join(dir, StateFileName))
	log.WithFields(logrus.Fields{"config": s.Path, "report_dir": p.ReportDir, "textfile_dir": p.TextfileDir}).
		Error("INVALID CONFIG: recording where the last valid config said")
}

// noteNoRecordPaths says, in the report and at error level, that the broken
// config file config found no record paths of a valid one (err says why),
// and where mode's textfile went (gauge, its directory; "" when nowhere).
func noteNoRecordPaths(config, mode string, err error, gauge string, log logrus.FieldLogger, note func(format string, args ...any)) {
	log = log.WithField("config", config).WithError(err)
	if gauge == "" {
		note("config invalid and %v: no report or textfile written", err)
		log.Error("INVALID CONFIG: no valid config was seen before (or the state file is unreadable), so vigil writes no report or textfile; the errors are on stderr only")
		return
	}
	file := filepath.Join(gauge, report.TextfileName(mode))
	note("config invalid and %v: no report written; the textfile (vigil_config_valid 0) goes to %s", err, file)
	log.WithField("textfile", file).Error("INVALID CONFIG: no valid config was seen before (or the state file is unreadable): no report written, only the textfile, so that vigil_config_valid 0 can alert")
}

// fallbackTextfileDir is where a run with a broken config and no record
// paths of a valid one writes its textfile: into the textfile directory the
// broken file names (named: it sets textfile_dir, or the deprecated
// textfile; value: that directory), else the shipped default def (where
// node_exporter's textfile collector reads by default), and only when that
// is an absolute path of a directory that exists, since a broken config
// creates nothing. "" means no textfile.
func fallbackTextfileDir(named bool, value, def string) string {
	dir := def
	if named {
		dir = value
	}
	if dir == "" || !filepath.IsAbs(dir) {
		return ""
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return ""
	}
	return dir
}
