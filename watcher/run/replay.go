package run

import (
	"fmt"
	"io"
	"os"

	"github.com/vigil-hpc/vigil/watcher/hang"
)

// Replay runs the detector with the settings' rule over a recorded trace
// (the --record format; many hosts allowed) and writes one JSON event per
// line to w. It acts on nothing.
func Replay(path string, s Settings, w io.Writer) error {
	s = s.Final()
	if err := s.Validate(nil); err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	defer f.Close()
	if err := hang.Replay(f, s.Hang, w); err != nil {
		return fmt.Errorf("replay %s: %w", path, err)
	}
	return nil
}
