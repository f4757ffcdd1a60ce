package hang

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"runtime"

	"github.com/vigil-hpc/vigil/watcher/trace"
)

// Replay runs a Detector with configuration c over the trace read from r and
// writes one JSON line per event to w. The trace may hold many hosts,
// interleaved in time order. When the trace holds more than one host, hung
// events carry the evidence key "culprits": the result of Culprits over the
// latest sample of every host at that moment. A bad trace line stops the
// replay with an error naming the line (events before it are written).
// Decoding runs on every CPU (trace.ReadParallel); the detector on one.
func Replay(r io.Reader, c Config, w io.Writer) error {
	if err := c.Validate(); err != nil {
		return err
	}
	d := New(c)
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	err := trace.ReadParallel(r, runtime.GOMAXPROCS(0), func(batch []trace.Sample) error {
		for _, s := range batch {
			for _, e := range d.Observe(s) {
				if e.Event == EventHung && len(d.Latest()) > 1 {
					cs := Culprits(d.Latest(), c)
					if cs == nil {
						cs = []Culprit{}
					}
					e.Evidence["culprits"] = cs
				}
				if err := enc.Encode(e); err != nil {
					return fmt.Errorf("write: %w", err)
				}
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("hang: replay: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("hang: replay: write: %w", err)
	}
	return nil
}
