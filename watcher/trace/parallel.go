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
	var pool sync.Pool // of chunk buffers
	done := make(chan struct{})
	defer close(done)
	c := &chunker{
		r:       r,
		pool:    &pool,
		done:    done,
		chunks:  make(chan chunk),
		futures: make(chan chan chunkResult, 2*workers),
		line:    1,
	}
	for i := 0; i < workers; i++ {
		go decodeChunks(c.chunks, &pool)
	}
	go c.run()
	// On an early return, closing done stops the chunker, which closes
	// chunks; the workers' result channels are buffered, so they finish and
	// exit.
	return deliver(c.futures, fn)
}

// chunk is a piece of the input, cut at a line end, for a worker to decode.
type chunk struct {
	data      []byte
	firstLine int              // number of the chunk's first line in the input
	res       chan chunkResult // where the worker puts the result
}

// chunkResult is a decoded chunk: its samples in input order, and the error
// that stopped it, nil at the chunk's end.
type chunkResult struct {
	samples []Sample
	err     error
}

// decodeChunks is a worker: it decodes each chunk it receives and returns
// the chunk's buffer to pool.
func decodeChunks(chunks <-chan chunk, pool *sync.Pool) {
	for j := range chunks {
		out, err := decodeChunk(j.data, j.firstLine)
		// Decoded samples hold no references into the chunk (strings are
		// copied), so its buffer can serve again.
		if cap(j.data) >= chunkSize {
			b := j.data[:0]
			pool.Put(&b)
		}
		j.res <- chunkResult{out, err}
	}
}

// decodeChunk decodes the lines of data, up to the first bad one, whose
// *LineError it returns numbered in the whole input (data's first line is
// firstLine).
func decodeChunk(data []byte, firstLine int) ([]Sample, error) {
	rd := newBytesReader(data)
	out := make([]Sample, 0, bytes.Count(data, []byte{'\n'})+1)
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
		err = &LineError{Line: le.Line + firstLine - 1, Err: le.Err}
	}
	return out, err
}

// chunker cuts the input at line ends into chunks for the workers, and
// queues each chunk's result channel in futures, in input order.
type chunker struct {
	r       io.Reader
	pool    *sync.Pool // of chunk buffers
	done    <-chan struct{}
	chunks  chan chunk
	futures chan chan chunkResult
	line    int // number of the next chunk's first line
}

// run reads the input to its end, or until done is closed or an error,
// which it queues as the last result.
func (c *chunker) run() {
	defer close(c.futures)
	defer close(c.chunks)
	var carry []byte // an incomplete line from the previous read
	for {
		data := c.buffer(carry)
		n, err := io.ReadFull(c.r, data[len(carry):cap(data)])
		data = data[:len(carry)+n]
		last := err == io.EOF || err == io.ErrUnexpectedEOF
		if err != nil && !last {
			c.send(nil, fmt.Errorf("trace: read: %w", err))
			return
		}
		if !last {
			cut := bytes.LastIndexByte(data, '\n')
			if cut < 0 {
				if len(data) > MaxLine {
					c.send(nil, fmt.Errorf("trace: line %d longer than %d bytes", c.line, MaxLine))
					return
				}
				carry = data
				continue
			}
			carry = append([]byte(nil), data[cut+1:]...)
			data = data[:cut+1]
		}
		if len(data) > 0 && !c.send(data, nil) {
			return
		}
		if last {
			return
		}
	}
}

// buffer returns a buffer that starts with carry and has room for
// chunkSize more bytes, from the pool where one is large enough.
func (c *chunker) buffer(carry []byte) []byte {
	if b, ok := c.pool.Get().(*[]byte); ok && cap(*b) >= len(carry)+chunkSize {
		return append((*b)[:0], carry...)
	}
	data := make([]byte, len(carry), len(carry)+chunkSize)
	copy(data, carry)
	return data
}

// send queues a result channel for data and hands data to a worker, or,
// with err, queues err as the result. It returns false when reading should
// stop: after err, or when done is closed.
func (c *chunker) send(data []byte, err error) bool {
	res := make(chan chunkResult, 1)
	select {
	case c.futures <- res:
	case <-c.done:
		return false
	}
	if err != nil {
		res <- chunkResult{err: err}
		return false
	}
	select {
	case c.chunks <- chunk{data: data, firstLine: c.line, res: res}:
	case <-c.done:
		return false
	}
	c.line += bytes.Count(data, []byte{'\n'})
	return true
}

// deliver calls fn with the samples of each result in futures, in order,
// until the first error of a chunk or of fn, which it returns.
func deliver(futures <-chan chan chunkResult, fn func(batch []Sample) error) error {
	for res := range futures {
		rs := <-res
		if len(rs.samples) > 0 {
			if err := fn(rs.samples); err != nil {
				return err
			}
		}
		if rs.err != nil {
			return rs.err
		}
	}
	return nil
}
