package hang

import (
	"bufio"
	"container/heap"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/vigil-hpc/vigil/watcher/hang/digest"
	"github.com/vigil-hpc/vigil/watcher/hang/hangfmt"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// Input is one trace to replay: a recorded file of one host, or of many
// hosts merged in time order.
type Input struct {
	Name string    // names the input in errors, e.g. the file name ("-" for stdin)
	R    io.Reader // the trace
}

// Summary tells what a replay read.
type Summary struct {
	Samples int           // samples read
	Hosts   int           // distinct hosts
	Span    time.Duration // longest stretch of one host's samples of one job (Detector.Span)
	// Digests counts the hang digests written (the pulse and strong
	// evidence can give one before any window).
	Digests int
}

// TooShort says, when no host's samples of one job span c.FirstVerdict, that
// the replay could not have given any verdict, with the numbers that would;
// "" when some host's samples were long enough.
func (s Summary) TooShort(c Config) string {
	if s.Samples == 0 {
		return "the trace holds no samples"
	}
	if s.Span >= c.FirstVerdict() {
		return ""
	}
	msg := fmt.Sprintf("trace covers %s; first verdict needs %s of one host's samples (the longer of grace %s and window %s): no window verdict was possible",
		hangfmt.ShortDuration(s.Span), hangfmt.ShortDuration(c.FirstVerdict()), hangfmt.ShortDuration(c.Grace), hangfmt.ShortDuration(c.Window))
	if s.Digests > 0 {
		msg += fmt.Sprintf("; the job's pulse or strong evidence gave %d digest(s)", s.Digests)
	}
	return msg
}

// ReplayInputs runs a Detector with configuration c over the traces ins and
// writes one JSON line per event to w. Each input must be in time order
// (as --record writes it); several inputs, typically one per host, are
// merged by time, ties taken in host order and then input order, which is
// the order of `sort` over the concatenated files. The output is the same as
// for one input holding the merged lines.
//
// When the samples hold more than one host, hung events carry the evidence
// key "culprits": the result of digest.Culprits over the latest sample of every host
// at that moment. Log records feed Episodes: after the per-host events, one
// digest per hang episode per job and the straggler events come in time
// order (jobs in id order at the same moment), as the live coordinator
// gives them. A bad trace line stops the replay with an error naming the
// input and the line (events before it are written). Decoding runs on every
// CPU (trace.ReadParallel); the detector on one.
func ReplayInputs(ins []Input, c Config, w io.Writer) (Summary, error) {
	var sum Summary
	if err := c.Validate(); err != nil {
		return sum, err
	}
	d := New(c)
	ep := NewEpisodes(c)
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	var newest time.Time
	due := func(now time.Time) error {
		for _, x := range ep.Due(now) {
			if d, ok := x.(digest.DigestEvent); ok && d.Event == digest.EventDigest {
				sum.Digests++
			}
			if err := enc.Encode(x); err != nil {
				return fmt.Errorf("write: %w", err)
			}
		}
		return nil
	}
	observe := func(s trace.Sample) error {
		if s.Time.After(newest) {
			newest = s.Time
			if err := due(s.Time); err != nil {
				return err
			}
		}
		if !s.IsLog() {
			sum.Samples++
		}
		events := d.Observe(s)
		for _, e := range events {
			if e.Event == EventHung && len(d.Latest()) > 1 {
				cs := digest.Culprits(d.Latest(), c)
				if cs == nil {
					cs = []digest.Culprit{}
				}
				e.Evidence["culprits"] = cs
			}
			if err := enc.Encode(e); err != nil {
				return fmt.Errorf("write: %w", err)
			}
		}
		ep.Observe(s, events)
		return nil
	}
	var err error
	if len(ins) == 1 {
		err = trace.ReadParallel(ins[0].R, runtime.GOMAXPROCS(0), func(batch []trace.Sample) error {
			for _, s := range batch {
				if err := observe(s); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil && ins[0].Name != "" {
			err = fmt.Errorf("%s: %w", ins[0].Name, err)
		}
	} else {
		err = merge(ins, observe)
	}
	sum.Hosts, sum.Span = len(d.Latest()), d.Span()
	if err == nil {
		err = due(time.Time{})
	}
	if err != nil {
		return sum, fmt.Errorf("hang: replay: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return sum, fmt.Errorf("hang: replay: write: %w", err)
	}
	return sum, nil
}

// errStopped ends an input's decoding when the merge stops early.
var errStopped = errors.New("stopped")

// source is one input being merged: its decoded batches arrive on ch, its
// final error on errc.
type source struct {
	name  string
	index int
	ch    chan []trace.Sample
	errc  chan error
	batch []trace.Sample
	i     int
}

// head is the source's next sample; valid after fill returned true.
func (s *source) head() *trace.Sample { return &s.batch[s.i] }

// fill makes head valid; false at the end of the input (err: its error).
func (s *source) fill() (bool, error) {
	for s.i >= len(s.batch) {
		b, ok := <-s.ch
		if !ok {
			if err := <-s.errc; err != nil {
				return false, fmt.Errorf("%s: %w", s.name, err)
			}
			return false, nil
		}
		s.batch, s.i = b, 0
	}
	return true, nil
}

// sources is a min-heap of sources by their head: time, host, input order.
type sources []*source

func (h sources) Len() int { return len(h) }
func (h sources) Less(i, j int) bool {
	a, b := h[i].head(), h[j].head()
	if !a.Time.Equal(b.Time) {
		return a.Time.Before(b.Time)
	}
	if a.Host != b.Host {
		return a.Host < b.Host
	}
	return h[i].index < h[j].index
}
func (h sources) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *sources) Push(x any)   { *h = append(*h, x.(*source)) }
func (h *sources) Pop() any {
	old := *h
	s := old[len(old)-1]
	*h = old[:len(old)-1]
	return s
}

// merge decodes every input in its own goroutine and calls fn with their
// samples merged by time. It stops at the first error of an input (when the
// merge reaches it) or of fn.
func merge(ins []Input, fn func(trace.Sample) error) error {
	done := make(chan struct{})
	defer close(done)
	workers := max(1, runtime.GOMAXPROCS(0)/len(ins))
	h := make(sources, 0, len(ins))
	var all []*source
	for i, in := range ins {
		s := &source{name: in.Name, index: i, ch: make(chan []trace.Sample, 2), errc: make(chan error, 1)}
		if s.name == "" {
			s.name = fmt.Sprintf("input %d", i+1)
		}
		all = append(all, s)
		go func(r io.Reader) {
			err := trace.ReadParallel(r, workers, func(batch []trace.Sample) error {
				select {
				case s.ch <- batch:
					return nil
				case <-done:
					return errStopped
				}
			})
			close(s.ch)
			s.errc <- err
		}(in.R)
	}
	for _, s := range all {
		ok, err := s.fill()
		if err != nil {
			return err
		}
		if ok {
			h = append(h, s)
		}
	}
	heap.Init(&h)
	for len(h) > 0 {
		s := h[0]
		if err := fn(*s.head()); err != nil {
			return err
		}
		s.i++
		ok, err := s.fill()
		if err != nil {
			return err
		}
		if ok {
			heap.Fix(&h, 0)
		} else {
			heap.Pop(&h)
		}
	}
	return nil
}
