package ncclras

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/watcher/trace"
)

func fixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func rank(r int, host string, pid int, gpu string) trace.RASRank {
	return trace.RASRank{Rank: r, Host: host, PID: pid, GPU: gpu}
}

// TestParseRecorded reads NVIDIA's recorded excerpts (testdata/README.md).
func TestParseRecorded(t *testing.T) {
	for _, tc := range []struct {
		file string
		want Status
	}{
		{"docs-running.txt", Status{Format: trace.RASText, Groups: []trace.RASGroup{
			{Group: 0, Comms: 8, Nodes: 4, RanksPerNode: "1", Ranks: 4, RanksInGroup: 32, Status: "RUNNING", Errors: "OK"}}}},
		{"docs-mismatch.txt", Status{Format: trace.RASText,
			Groups: []trace.RASGroup{{Group: 0, Comms: 1, Nodes: 4, RanksPerNode: "8", Ranks: 32, RanksInGroup: 32, Status: "RUNNING", Errors: "MISMATCH"}},
			Comms: []trace.RASComm{{ID: "#0-0", Hash: "27a079b828ff1a75", Ranks: 32, Nodes: 4, Errors: "MISMATCH", Counts: []trace.RASCount{
				{Count: 6650, Ranks: 26},
				{Count: 6649, Ranks: 6, Listed: []trace.RASRank{
					rank(0, "172.16.64.210", 483072, "0"), rank(2, "172.16.64.210", 483074, "2"), rank(3, "172.16.64.210", 483075, "3"),
					rank(4, "172.16.64.210", 483076, "4"), rank(5, "172.16.64.210", 483077, "5"), rank(7, "172.16.64.210", 483079, "7")}},
			}}}}},
		{"docs-transition.txt", Status{Format: trace.RASText,
			Groups: []trace.RASGroup{
				{Group: 0, Comms: 1, Nodes: 4, RanksPerNode: "1-2", Ranks: 32, RanksInGroup: 32, Status: "FINALIZE", Errors: "MISMATCH"},
				{Group: 1, Comms: 7, Nodes: 4, RanksPerNode: "1", Ranks: 4, RanksInGroup: 28, Status: "RUNNING", Errors: "OK"},
				{Group: 2, Comms: 1, Nodes: 4, RanksPerNode: "1", Ranks: 4, RanksInGroup: 4, Status: "INIT", Errors: "OK"}},
			Comms: []trace.RASComm{{ID: "#0-0", Hash: "9e17999afaa87dbb", Ranks: 32, Nodes: 4, Errors: "MISMATCH"}}}},
		{"docs-incomplete.txt", Status{Format: trace.RASText,
			Groups:       []trace.RASGroup{{Group: 0, Comms: 1, Nodes: 4, RanksPerNode: "7-8", Ranks: 32, RanksInGroup: 32, Status: "RUNNING", Errors: "INCOMPLETE"}},
			Comms:        []trace.RASComm{{ID: "#0-0", Hash: "cf264af53edbe986", Ranks: 32, Nodes: 4, Errors: "INCOMPLETE", MissingCount: 1, Missing: []trace.RASRank{{Rank: 21}}}},
			Unresponsive: []trace.RASRank{rank(-1, "172.16.64.213", 3487984, "5")}, UnresponsiveCount: 1, Timeouts: 2}},
		{"docs-dead.txt", Status{Format: trace.RASText,
			Comms: []trace.RASComm{{ID: "#0-0", Hash: "cf264af53edbe986", Errors: "INCOMPLETE", MissingCount: 1, Missing: []trace.RASRank{{Rank: 21}}}},
			Dead:  []trace.RASRank{rank(-1, "172.16.64.213", 3487984, "5")}, DeadCount: 1}},
		{"docs-json.json", Status{Format: trace.RASJSON, Version: "2.29.1",
			Comms: []trace.RASComm{{Hash: "ae94423cfbb2ef4a", Ranks: 2, Nodes: 1, Errors: "INCOMPLETE", MissingCount: 1,
				Missing: []trace.RASRank{{Rank: 1, Host: "172.16.64.245", PID: 1524345, GPU: "1", Unresponsive: true}}}},
			Unresponsive: []trace.RASRank{rank(-1, "172.16.64.245", 1524345, "1")}, UnresponsiveCount: 1}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			got, err := Parse(fixture(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Parse:\n got %s\nwant %s", js(got), js(tc.want))
			}
		})
	}
}

// TestParseBuilt reads the answer built from 2.26's format strings.
func TestParseBuilt(t *testing.T) {
	got, err := Parse(fixture(t, "built-2.26-hang.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want := Status{Format: trace.RASText, Version: "2.26.6",
		Groups: []trace.RASGroup{
			{Group: 0, Comms: 1, Nodes: 4, RanksPerNode: "4", Ranks: 16, RanksInGroup: 16, Status: "RUNNING", Errors: "INCOMPLETE,MISMATCH"},
			{Group: 1, Comms: 4, Nodes: 4, RanksPerNode: "1", Ranks: 4, RanksInGroup: 16, Status: "RUNNING", Errors: "MISMATCH"}},
		Comms: []trace.RASComm{
			{ID: "#0-0", Hash: "0b5e1f3a9c2d4e70", Ranks: 16, Nodes: 4, Errors: "INCOMPLETE,MISMATCH", MissingCount: 2,
				Missing: []trace.RASRank{rank(10, "10.0.0.13", 41207, "2"), rank(13, "10.0.0.14", 52011, "1 (NVML 3)")},
				Counts: []trace.RASCount{{Op: "AllReduce", Count: 812, Ranks: 13},
					{Op: "AllReduce", Count: 811, Ranks: 1, Listed: []trace.RASRank{rank(7, "10.0.0.12", 30977, "3")}}}},
			{ID: "#1-2", Hash: "7c41d09be35a1f28", Ranks: 4, Nodes: 4, Errors: "MISMATCH", Counts: []trace.RASCount{
				{Op: "AllGather", Count: 40, Ranks: 3},
				{Op: "AllGather", Count: 0, Ranks: 1, Listed: []trace.RASRank{rank(1, "10.0.0.12", 30976, "2")}},
				{Op: "Broadcast", Count: 3, Ranks: 2},
				{Op: "Broadcast", Count: 0, Ranks: 2, Listed: []trace.RASRank{rank(0, "10.0.0.11", 17650, "2"), {Rank: 1}}}}},
		},
		Unresponsive: []trace.RASRank{rank(-1, "10.0.0.13", 41207, "2")}, UnresponsiveCount: 1,
		Dead: []trace.RASRank{rank(-1, "10.0.0.14", 52011, "1 (NVML 3)")}, DeadCount: 1, Timeouts: 1}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Parse:\n got %s\nwant %s", js(got), js(want))
	}
}

func TestParseNotAnAnswer(t *testing.T) {
	for _, text := range []string{"", "ERROR: Unknown command STATUS\n", "HTTP/1.1 400 Bad Request\r\n\r\n", "{not json"} {
		if _, err := Parse(text); !errors.Is(err, ErrNoAnswer) {
			t.Errorf("Parse(%q) = %v, want ErrNoAnswer", text, err)
		}
	}
}

// TestParseGarbageRanks: NCCL 2.27.3 printed garbage rank numbers for the
// missing ranks of a NOCOMM communicator (NVIDIA/nccl#1762): they are
// dropped, as ranks beyond the communicator's size.
func TestParseGarbageRanks(t *testing.T) {
	text := "Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors\n" +
		"    #  in group  per comm  per node  per comm  in group\n" +
		"    0         4         0         0         0         0    NOCOMM  INCOMPLETE,MISMATCH\n\n" +
		"Errors\n======\n\n#0-0 (93d7000200000001) INCOMPLETE\n  Missing communicator data from 255 ranks\n" +
		"  Rank 1057455228 -- [process information not found]\n"
	got, err := Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Comms) != 1 || len(got.Comms[0].Missing) != 0 || got.Comms[0].MissingCount != 255 {
		t.Errorf("Parse: %s", js(got))
	}
}

// TestRecordFits: the trace record of a big answer keeps within
// trace.MaxRASLine and still reads.
func TestRecordFits(t *testing.T) {
	st, err := Parse(fixture(t, "built-2.26-hang.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var many []trace.RASRank
	for i := range 500 {
		many = append(many, rank(i, "10.0.0.12", 30000+i, "3"))
	}
	st.Comms[0].Counts[1].Listed = many
	st.Comms[0].Counts[1].Ranks = len(many)
	rec := trace.RASRecord("gpu01", "77", testTime, st)
	if n := len(rec.Log.Line); n > trace.MaxRASLine {
		t.Fatalf("record line %d bytes", n)
	}
	back, ok := trace.ParseRAS(rec.Log.Line)
	if !ok || !back.Trimmed || len(back.Comms) == 0 || back.Comms[0].Counts[1].Ranks != 500 || len(back.Comms[0].Counts[1].Listed) == 0 {
		t.Errorf("record: %s", rec.Log.Line)
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"docs-running.txt", "docs-mismatch.txt", "docs-transition.txt", "docs-incomplete.txt",
		"docs-dead.txt", "docs-json.json", "built-2.26-hang.txt"} {
		f.Add(fixture(f, name))
	}
	f.Fuzz(func(t *testing.T, text string) {
		st, err := Parse(text)
		if err != nil {
			return
		}
		rec := trace.RASRecord("h", "1", testTime, st)
		if len(rec.Log.Line) > trace.MaxRASLine {
			t.Errorf("record of %d bytes", len(rec.Log.Line))
		}
		if _, ok := trace.ParseRAS(rec.Log.Line); !ok {
			t.Errorf("record does not read back: %s", rec.Log.Line)
		}
	})
}

var testTime = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
