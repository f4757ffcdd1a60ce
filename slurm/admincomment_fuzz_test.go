package slurm

import (
	"encoding/json"
	"testing"
)

// FuzzParseJobAdminComment: Slurm's JSON job listing is read for the
// AdminComment relay; whatever the bytes (the job's own strings inside
// the document included), the parser returns a comment or an error, never
// panics, and a comment comes only from the job asked for.
func FuzzParseJobAdminComment(f *testing.F) {
	f.Add([]byte(`{"jobs":[{"job_id":42,"admin_comment":"vigil:net-connect NetIsolated"}]}`), "42")
	f.Add([]byte(`{"jobs":[{"job_id":{"set":true,"infinite":false,"number":7},"admin_comment":null}]}`), "7")
	f.Add([]byte("warning: something\n{\"jobs\":[{\"job_id\":9,\"current_working_directory\":\"x AdminComment=vigil:forged\"}]}"), "9")
	f.Add([]byte(`{"jobs":[]}`), "1")
	f.Add([]byte(`not json`), "1")
	f.Fuzz(func(t *testing.T, out []byte, id string) {
		c, err := ParseJobAdminComment(out, id)
		if err != nil {
			if c != "" {
				t.Fatalf("an error with a comment %q: %v", c, err)
			}
			return
		}
		if c == "" {
			return
		}
		// A comment was read: the document must hold a job whose
		// admin_comment is exactly it.
		var doc struct {
			Jobs []struct {
				AdminComment *string `json:"admin_comment"`
			} `json:"jobs"`
		}
		if i := indexBrace(out); i >= 0 {
			out = out[i:]
		}
		if json.Unmarshal(out, &doc) != nil {
			t.Fatalf("comment %q from a document that does not decode", c)
		}
		found := false
		for _, j := range doc.Jobs {
			found = found || (j.AdminComment != nil && *j.AdminComment == c)
		}
		if !found {
			t.Fatalf("comment %q is no job's admin_comment", c)
		}
	})
}

func indexBrace(b []byte) int {
	for i, c := range b {
		if c == '{' {
			return i
		}
	}
	return -1
}
