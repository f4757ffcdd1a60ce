package trace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

func TestReadParallelMatchesReader(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for i := 0; i < 9000; i++ { // several chunks
		if err := w.Write(randSample(r, i)); err != nil {
			t.Fatal(err)
		}
		if i%1000 == 0 {
			buf.WriteString("\n") // blank lines count as lines
		}
	}
	data := buf.Bytes()
	if len(data) < 3*chunkSize {
		t.Fatalf("test input %d bytes, want several chunks", len(data))
	}
	var want []Sample
	rd := NewReader(bytes.NewReader(data))
	for {
		s, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, s)
	}
	for _, workers := range []int{0, 1, 3} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			var got []Sample
			err := ReadParallel(iotestHalfReader{bytes.NewReader(data)}, workers, func(b []Sample) error {
				got = append(got, b...)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got %d samples, want %d (or they differ)", len(got), len(want))
			}
		})
	}
}

// iotestHalfReader returns at most half of what is asked, to exercise short reads.
type iotestHalfReader struct{ r io.Reader }

func (h iotestHalfReader) Read(p []byte) (int, error) { return h.r.Read(p[:(len(p)+1)/2]) }

func TestReadParallelErrors(t *testing.T) {
	good := `{"v":1,"time":"2026-11-29T10:00:00Z","host":"h"}` + "\n"
	// The bad line is deep in a later chunk.
	n := 2*chunkSize/len(good) + 17
	in := strings.Repeat(good, n) + `{"v":3,"time":"2026-11-29T10:00:00Z","host":"h"}` + "\n" + strings.Repeat(good, 1000)
	count := 0
	err := ReadParallel(strings.NewReader(in), 4, func(b []Sample) error { count += len(b); return nil })
	var le *LineError
	if !errors.As(err, &le) || le.Line != n+1 || !errors.Is(err, ErrVersion) {
		t.Fatalf("got %v, want a version error on line %d", err, n+1)
	}
	if count != n {
		t.Fatalf("fn saw %d samples before the bad line, want %d", count, n)
	}
	stop := errors.New("stop")
	err = ReadParallel(strings.NewReader(strings.Repeat(good, n)), 2, func([]Sample) error { return stop })
	if !errors.Is(err, stop) {
		t.Fatalf("fn's error: got %v", err)
	}
	err = ReadParallel(io.MultiReader(strings.NewReader(good), errReader{}), 2, func([]Sample) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("reader's error: got %v", err)
	}
	// A last line without newline.
	count = 0
	if err := ReadParallel(strings.NewReader(good+strings.TrimSuffix(good, "\n")), 2, func(b []Sample) error { count += len(b); return nil }); err != nil || count != 2 {
		t.Fatalf("no final newline: %v, %d samples", err, count)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("boom") }

// BenchmarkReadParallel decodes with one worker per CPU.
func BenchmarkReadParallel(b *testing.B) {
	data := benchLines(b, 50000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	lines := 0
	for i := 0; i < b.N; i++ {
		if err := ReadParallel(bytes.NewReader(data), runtime.GOMAXPROCS(0), func(s []Sample) error { lines += len(s); return nil }); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(lines)/b.Elapsed().Seconds(), "lines/s")
}
