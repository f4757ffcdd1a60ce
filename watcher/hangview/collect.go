package hangview

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/vigil-hpc/vigil/watcher/hang/digest"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// Point is one host's reading reduced to what the page plots.
type Point struct {
	Time    time.Time // when the sample was taken
	Job     string    // Slurm job id
	IOBytes uint64    // cumulative I/O of the job's processes, bytes (trace.IO.Total)
	CPUUsec uint64    // cumulative CPU time of the job, microseconds
	Util    float64   // mean device utilisation, percent; NaN without a device reading
	PowerW  float64   // device power summed over the host's devices, watts; NaN without a device reading
	NoIO    bool      // the I/O could not be read ("io" missing)
	NoCPU   bool      // the CPU time could not be read ("cpu" missing)
}

// PointOf reduces a reading (not a log record) to a Point.
func PointOf(s trace.Sample) Point {
	p := Point{Time: s.Time, Job: s.Job, IOBytes: s.IO.Total(), CPUUsec: s.CPUUsec,
		Util: math.NaN(), PowerW: math.NaN(), NoIO: s.HasMissing("io"), NoCPU: s.HasMissing("cpu")}
	if len(s.Accel) > 0 && !s.HasMissing("accel") {
		p.Util, p.PowerW = 0, 0
		for _, a := range s.Accel {
			p.Util += a.Util
			p.PowerW += a.PowerW
		}
		p.Util /= float64(len(s.Accel))
	}
	return p
}

// Event is one line of replay output: a host's event (suspect, hung,
// recovered, straggler) or a job's digest. Fields that the line's kind
// does not carry stay empty.
type Event struct {
	Time     time.Time              `json:"time"`
	Host     string                 `json:"host"`     // host events
	Job      string                 `json:"job"`      // Slurm job id
	Event    string                 `json:"event"`    // hang.EventHung, digest.EventDigest, ...
	Reason   string                 `json:"reason"`   // host events: the stable token
	Message  string                 `json:"message"`  // host events: for people
	Cause    string                 `json:"cause"`    // digests: one of digest's Cause constants
	Culprits []digest.DigestCulprit `json:"culprits"` // digests: the culprit hosts
	Hint     string                 `json:"hint"`     // digests: what the job's user can do
	Hosts    []string               `json:"hosts"`    // digests: every host of the job
	Since    time.Time              `json:"since"`    // digests: when the hang began (zero: not given)
}

// Collector gathers what a replay reads and prints, for the page: the
// samples of its inputs (through Tee) and the events of its output
// (through Events). It is safe for concurrent use.
type Collector struct {
	mu     sync.Mutex
	hosts  map[string][]Point
	events []Event
	line   []byte // an output line not yet ended
}

// NewCollector returns an empty Collector.
func NewCollector() *Collector { return &Collector{hosts: map[string][]Point{}} }

// Tee returns a reader that reads r and collects the readings on the way,
// and a function to call once the replay is done with it (it waits for the
// collecting to finish). A line the collector cannot decode ends the
// collecting of that input quietly: the replay reports it.
func (c *Collector) Tee(r io.Reader) (io.Reader, func()) {
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		tr := trace.NewReader(pr)
		for {
			s, err := tr.Next()
			if err != nil {
				if !errors.Is(err, io.EOF) {
					io.Copy(io.Discard, pr) //nolint:errcheck // draining only
				}
				return
			}
			if !s.IsLog() {
				c.add(s)
			}
		}
	}()
	return io.TeeReader(r, pw), func() {
		pw.Close()
		<-done
	}
}

func (c *Collector) add(s trace.Sample) {
	p := PointOf(s)
	c.mu.Lock()
	c.hosts[s.Host] = append(c.hosts[s.Host], p)
	c.mu.Unlock()
}

// Events returns a writer that writes to w and collects every JSON line
// written through it as an Event (lines that are not one are left out).
func (c *Collector) Events(w io.Writer) io.Writer { return eventWriter{c, w} }

type eventWriter struct {
	c *Collector
	w io.Writer
}

func (e eventWriter) Write(b []byte) (int, error) {
	n, err := e.w.Write(b)
	e.c.mu.Lock()
	defer e.c.mu.Unlock()
	e.c.line = append(e.c.line, b[:n]...)
	for {
		i := bytes.IndexByte(e.c.line, '\n')
		if i < 0 {
			break
		}
		var ev Event
		if json.Unmarshal(e.c.line[:i], &ev) == nil && ev.Event != "" {
			e.c.events = append(e.c.events, ev)
		}
		e.c.line = e.c.line[i+1:]
	}
	return n, err
}

// Data returns what was collected, each host's points in time order, with
// the hang window of the replay's configuration.
func (c *Collector) Data(window time.Duration) Data {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := Data{Window: window, Hosts: make(map[string][]Point, len(c.hosts)), Events: append([]Event(nil), c.events...)}
	for h, ps := range c.hosts {
		ps = append([]Point(nil), ps...)
		sort.SliceStable(ps, func(i, j int) bool { return ps[i].Time.Before(ps[j].Time) })
		d.Hosts[h] = ps
	}
	return d
}
