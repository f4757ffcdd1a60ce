package config

import (
	"strings"
	"testing"
)

// TestQuotedKeyErrorNamesLine: an unknown key below a quoted table name
// with spaces (a device model, as vigil-baseline writes it) is reported
// with its line, although the decoder quotes that part of the key.
func TestQuotedKeyErrorNamesLine(t *testing.T) {
	doc := "[checks.x]\n\n[checks.x.extra.\"NVIDIA H100 80GB HBM3\"]\nrtt_us = 248\n"
	f, err := Parse(strings.NewReader(doc), "x.toml")
	if err != nil {
		t.Fatal(err)
	}
	err = f.Decode("checks.x", &struct{}{})
	if err == nil {
		t.Fatal("no error")
	}
	want := `x.toml:4: checks.x.extra."NVIDIA H100 80GB HBM3".rtt_us: unknown key`
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want %q", err, want)
	}
}
