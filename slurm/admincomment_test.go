package slurm

import (
	"errors"
	"testing"
)

func TestParseJobAdminComment(t *testing.T) {
	for _, tc := range []struct {
		name, out, want string
		err             error
	}{
		{"set", `{"jobs":[{"job_id":7,"admin_comment":"vigil-net:1:n2"}]}`, "vigil-net:1:n2", nil},
		{"text before the document", "warning: x\n" + `{"jobs":[{"job_id":7,"admin_comment":"a b=c"}]}`, "a b=c", nil},
		{"null", `{"jobs":[{"job_id":7,"admin_comment":null}]}`, "", nil},
		{"absent", `{"jobs":[{"job_id":7}]}`, "", nil},
		{"another job's", `{"jobs":[{"job_id":8,"admin_comment":"x"}]}`, "", ErrNoSuchJob},
		{"set number", `{"jobs":[{"job_id":{"set":true,"number":7},"admin_comment":"y"}]}`, "y", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseJobAdminComment([]byte(tc.out), "7")
			if got != tc.want || (tc.err == nil) != (err == nil) || (tc.err != nil && !errors.Is(err, tc.err)) {
				t.Fatalf("ParseJobAdminComment = %q, %v; want %q, %v", got, err, tc.want, tc.err)
			}
		})
	}
	if _, err := ParseJobAdminComment([]byte("JobId=7 AdminComment=x"), "7"); err == nil {
		t.Error("text that is not JSON was read")
	}
}

// TestJobInfoHasNoAdminComment: the -o parser never offers an AdminComment,
// whatever the line holds (a WorkDir "x AdminComment=WORD" reads alike).
func TestJobInfoHasNoAdminComment(t *testing.T) {
	line := "JobId=7 JobName=j UserId=u(1) JobState=RUNNING Command=/a WorkDir=/tmp/x AdminComment=vigil-net:0:n1 Comment=c StdOut=/o\n"
	j, err := ParseJob([]byte(line), "7")
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := j.Fields["AdminComment"]; ok {
		t.Fatalf("Fields[AdminComment] = %q", v)
	}
}
