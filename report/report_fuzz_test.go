package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// promLine is a sample line of the text exposition format: a metric name,
// labels with escaped values, and a number.
var promLine = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*\{([a-zA-Z_][a-zA-Z0-9_]*="(\\[\\"n]|[^"\\\n])*"(,[a-zA-Z_][a-zA-Z0-9_]*="(\\[\\"n]|[^"\\\n])*")*)?\} (\S+)$`)

// FuzzReportOutputs decodes a JSON report (the golden one and variants;
// check messages, reasons and device names come from drivers and child
// processes) and writes it out as the prolog does. The Prometheus textfile
// stays well formed whatever the strings hold (node_exporter drops a whole
// file for one bad line), the JSON re-reads to the same report, the file
// name stays one path element, and the table is written without a panic.
func FuzzReportOutputs(f *testing.F) {
	golden, err := os.ReadFile(filepath.Join("testdata", "report.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(golden)
	f.Add([]byte(`{"v":1,"mode":"pro\"log\n","job":"../x y","results":[{"check":"a\\b","device":"gpu\u0000","reason":"R","message":"m\nn","values":[{"name":"n}","value":-1e308,"threshold":1e-300,"op":"<="}]}]}`))
	f.Add([]byte(`{"start":"0001-01-01T00:00:00Z","duration_ns":-9223372036854775808,"results":[{"check":""}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var r Report
		if json.Unmarshal(data, &r) != nil {
			return
		}
		var prom bytes.Buffer
		if err := Prometheus(&prom, &r); err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSuffix(prom.String(), "\n"), "\n") {
			if strings.HasPrefix(line, "# HELP vigil_") || strings.HasPrefix(line, "# TYPE vigil_") {
				continue
			}
			m := promLine.FindStringSubmatch(line)
			if m == nil {
				t.Fatalf("bad textfile line %q", line)
			}
			if _, err := strconv.ParseFloat(m[len(m)-1], 64); err != nil {
				t.Fatalf("bad value in %q", line)
			}
		}
		b, err := r.JSON()
		if err != nil {
			t.Fatal(err)
		}
		var again Report
		if err := json.Unmarshal(b, &again); err != nil {
			t.Fatalf("re-reading %s: %v", b, err)
		}
		if b2, _ := again.JSON(); !bytes.Equal(b, b2) {
			t.Fatalf("round trip changed\n%s\ninto\n%s", b, b2)
		}
		if name := r.FileName(); strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
			t.Fatalf("file name %q", name)
		}
		Table(&bytes.Buffer{}, &r)
		_ = DescribeAction(&r)
	})
}
