package loop

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/vigil-hpc/vigil/internal/osutil"
	"github.com/vigil-hpc/vigil/watcher/hang"
	"github.com/vigil-hpc/vigil/watcher/hangview"
)

// Stdin is the replay path that stands for standard input.
const Stdin = "-"

// ErrReplayArgs is returned for a replay without traces, or with standard
// input named twice.
var ErrReplayArgs = errors.New("replay: bad trace list")

// Replay runs the detector with the settings' rule over recorded traces (the
// --record format) and writes one JSON event per line to stdout. paths name
// the traces: one file per host as --record writes them, or files of many
// hosts each in time order; they are merged by time, so the events are those
// of the merged file. "-" is stdin. When no host's samples were long enough
// for a window verdict, Replay says so on stderr, with the numbers that
// would be (and the digests the pulse or strong evidence gave sooner).
// When html is not "", Replay also writes the replay as one self-contained
// HTML page to that file (hangview.Render; replaced atomically), even when
// no verdict was possible. It acts on nothing. s are final and valid
// (Resolve).
func Replay(paths []string, html string, s Settings, stdin io.Reader, stdout, stderr io.Writer) error {
	if err := UseSiteRules(s); err != nil {
		return err
	}
	if len(paths) == 0 {
		return fmt.Errorf("%w: no trace given", ErrReplayArgs)
	}
	ins := make([]hang.Input, 0, len(paths))
	seenStdin := false
	for _, p := range paths {
		if p == Stdin {
			if seenStdin {
				return fmt.Errorf("%w: %q (standard input) given twice", ErrReplayArgs, Stdin)
			}
			seenStdin = true
			ins = append(ins, hang.Input{Name: "standard input", R: stdin})
			continue
		}
		f, err := os.Open(p)
		if err != nil {
			return fmt.Errorf("replay: %w", err)
		}
		defer f.Close()
		ins = append(ins, hang.Input{Name: p, R: f})
	}
	var col *hangview.Collector
	var waits []func()
	if html != "" {
		col = hangview.NewCollector()
		for i := range ins {
			r, wait := col.Tee(ins[i].R)
			ins[i].R, waits = r, append(waits, wait)
		}
		stdout = col.Events(stdout)
	}
	sum, err := hang.ReplayInputs(ins, s.Hang, stdout)
	for _, wait := range waits {
		wait()
	}
	if err != nil {
		return err // names the input and the line
	}
	if col != nil {
		if err := osutil.WriteFile(html, hangview.Render(col.Data(s.Hang.Window)), 0o644); err != nil {
			return fmt.Errorf("replay: --html: %w", err)
		}
	}
	if msg := sum.TooShort(s.Hang); msg != "" {
		fmt.Fprintf(stderr, "vigil-watch: replay: %s\n", msg)
	}
	return nil
}
