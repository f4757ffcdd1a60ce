package model

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// pythonDirs are where an interpreter named without a directory is looked
// for after PATH: slurmd runs the Prolog with no PATH at all, and Debian,
// RHEL and a source build put python3 in one of these.
var pythonDirs = []string{"/usr/bin", "/usr/local/bin"}

// findPython resolves the python setting: a path is taken as it is; a
// name is looked up in PATH, then in pythonDirs. It returns the
// interpreter and where it looked, for the message when none is found.
func findPython(setting string) (string, []string, error) {
	if strings.Contains(setting, "/") {
		if err := executable(setting); err != nil {
			return "", []string{setting}, err
		}
		return setting, []string{setting}, nil
	}
	var searched []string
	if os.Getenv("PATH") != "" {
		searched = append(searched, "PATH "+os.Getenv("PATH"))
		if p, err := exec.LookPath(setting); err == nil {
			if abs, err := filepath.Abs(p); err == nil {
				p = abs
			}
			return p, searched, nil
		}
	} else {
		searched = append(searched, "PATH unset")
	}
	for _, d := range pythonDirs {
		p := filepath.Join(d, setting)
		searched = append(searched, p)
		if executable(p) == nil {
			return p, searched, nil
		}
	}
	return "", searched, fmt.Errorf("no Python interpreter %q", setting)
}

// executable is nil when path is a regular file someone may execute.
func executable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", path)
	}
	return nil
}

// ConfigNote says which interpreter a run with these settings would use
// (vigil-prolog --check-config).
func (s *Settings) ConfigNote() string {
	p, searched, err := findPython(s.Python)
	if err != nil {
		return fmt.Sprintf("python %q: none found (searched: %s): the check would be unknown ModelNoPyTorch",
			s.Python, strings.Join(searched, ", "))
	}
	return fmt.Sprintf("python %q: would run %s", s.Python, p)
}
