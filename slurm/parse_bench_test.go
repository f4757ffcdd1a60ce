package slurm

import (
	"strings"
	"testing"
)

func BenchmarkParseNodes(b *testing.B) {
	out := readTestdata(b, "nodes-10.txt")
	b.SetBytes(int64(len(out)))
	for i := 0; i < b.N; i++ {
		if _, err := ParseNodes(out); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseJobs(b *testing.B) {
	out := readTestdata(b, "jobs-5.txt")
	b.SetBytes(int64(len(out)))
	for i := 0; i < b.N; i++ {
		if _, err := ParseJobs(out); err != nil {
			b.Fatal(err)
		}
	}
}

// A line of many free-text fields must still parse in linear-ish time.
func TestParseManyFreeTextFields(t *testing.T) {
	line := "JobId=1 " + strings.Repeat("JobName=a UserId=b ", 50000)
	jobs, err := ParseJobs([]byte(line))
	if err != nil || len(jobs) != 1 {
		t.Fatalf("%d jobs, %v", len(jobs), err)
	}
}
