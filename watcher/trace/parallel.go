package trace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
)

// chunkSize is how much input one decoding job holds, in bytes.
const chunkSize = 1 << 20

// ReadParallel decodes the trace read from r with up to workers goroutines
// and calls fn, from the calling goroutine, with the samples in input order,
// a batch at a time (a batch is fn's to keep). It stops at the first bad line
// (an error of type *LineError naming the line, as Reader.Next would), at the
// first error of r or of fn, and returns that error; nil at the end of the
// input. workers < 1 means 1.
//
// It is for replays of large traces: decoding, about half of a replay's
// work, runs on several cores while fn (the detector) runs on one.
func ReadParallel(r io.Reader, workers int, fn func(batch []Sample) error) error {
	if workers < 1 {
		workers = 1
	}
	type result struct {
		samples []Sample
		err     error
	}
	type job struct {
		data      []byte
		firstLine int
		res       chan result
	}
	var pool sync.Pool // of chunk buffers
	done := make(chan struct{})
	defer close(done)
	jobs := make(chan job)
	futures := make(chan chan result, 2*workers)

	for i := 0; i < workers; i++ {
		go func() {
			for j := range jobs {
				rd := newBytesReader(j.data)
				out := make([]Sample, 0, bytes.Count(j.data, []byte{'\n'})+1)
				var err error
				for {
					var s Sample
					s, err = rd.Next()
					if err != nil {
						break
					}
					out = append(out, s)
				}
				if err == io.EOF {
					err = nil
				}
				var le *LineError
				if errors.As(err, &le) {
					err = &LineError{Line: le.Line + j.firstLine - 1, Err: le.Err}
				}
				// Decoded samples hold no references into the chunk
				// (strings are copied), so its buffer can serve again.
				if cap(j.data) >= chunkSize {
					pool.Put(j.data[:0])
				}
				j.res <- result{out, err}
			}
		}()
	}

	// The chunker cuts the input at line ends into jobs, and queues each
	// job's result channel in input order.
	go func() {
		defer close(futures)
		defer close(jobs)
		line := 1
		var carry []byte
		send := func(data []byte, err error) bool {
			res := make(chan result, 1)
			select {
			case futures <- res:
			case <-done:
				return false
			}
			if err != nil {
				res <- result{err: err}
				return false
			}
			select {
			case jobs <- job{data: data, firstLine: line, res: res}:
			case <-done:
				return false
			}
			line += bytes.Count(data, []byte{'\n'})
			return true
		}
		for {
			var data []byte
			if b, ok := pool.Get().([]byte); ok && cap(b) >= len(carry)+chunkSize {
				data = append(b[:0], carry...)
			} else {
				data = make([]byte, len(carry), len(carry)+chunkSize)
				copy(data, carry)
			}
			n, err := io.ReadFull(r, data[len(carry):cap(data)])
			data = data[:len(carry)+n]
			last := err == io.EOF || err == io.ErrUnexpectedEOF
			if err != nil && !last {
				send(nil, fmt.Errorf("trace: read: %w", err))
				return
			}
			if !last {
				cut := bytes.LastIndexByte(data, '\n')
				if cut < 0 {
					if len(data) > MaxLine {
						send(nil, fmt.Errorf("trace: line %d longer than %d bytes", line, MaxLine))
						return
					}
					carry = data
					continue
				}
				carry = append([]byte(nil), data[cut+1:]...)
				data = data[:cut+1]
			}
			if len(data) > 0 && !send(data, nil) {
				return
			}
			if last {
				return
			}
		}
	}()

	var err error
	for res := range futures {
		rs := <-res
		if len(rs.samples) > 0 {
			if err = fn(rs.samples); err != nil {
				break
			}
		}
		if rs.err != nil {
			err = rs.err
			break
		}
	}
	// On an early return, closing done stops the chunker, which closes jobs;
	// the workers' result channels are buffered, so they finish and exit.
	return err
}
