package slurm

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// racyComments is a job whose comment other writers change: after each of
// our writes, the next entry of others (if any) replaces it.
type racyComments struct {
	comment string
	others  []string
	sets    []string
	reads   int
	failSet error
}

func (r *racyComments) Job(ctx context.Context, id string) (JobInfo, error) {
	r.reads++
	return JobInfo{ID: id, Comment: r.comment}, nil
}

func (r *racyComments) SetJobComment(ctx context.Context, id, comment string) error {
	if r.failSet != nil {
		return r.failSet
	}
	r.comment = oneLine(comment)
	r.sets = append(r.sets, comment)
	if len(r.others) > 0 {
		r.comment, r.others = r.others[0], r.others[1:]
	}
	return nil
}

func appendOnce(tok string) func(string) (string, bool) {
	return func(old string) (string, bool) {
		if slices.Contains(strings.Fields(old), tok) {
			return old, true
		}
		return strings.TrimSpace(old + " " + tok), true
	}
}

// noWait stands in for CommentUpdate's wait before each read-back, checking
// the wait is within its documented bounds: 250 ms to 4 s, and as much again.
func noWait(t *testing.T, waits *int) func(context.Context, time.Duration) error {
	return func(_ context.Context, d time.Duration) error {
		if d < 250*time.Millisecond || d > 8*time.Second {
			t.Errorf("wait before the read-back %v, want 250ms to 8s", d)
		}
		*waits++
		return nil
	}
}

func TestUpdateJobComment(t *testing.T) {
	ctx := context.Background()
	var waits int
	update := CommentUpdate{Sleep: noWait(t, &waits)}.Run
	cases := []struct {
		name    string
		start   string
		others  []string
		want    string
		sets    int
		written bool
	}{
		{"no race", "", nil, "a", 1, true},
		{"nothing to change", "a", nil, "a", 0, false},
		{"another writer replaced ours: merged again", "", []string{"b"}, "b a", 2, true},
		{"two more writers", "", []string{"b", "b a c"}, "b a c", 2, true},
		{"writers that never stop: bounded", "", []string{"b", "c", "d", "e", "f", "g"}, "f", commentAttempts, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &racyComments{comment: tc.start, others: tc.others}
			waits = 0
			written, err := update(ctx, r, "1", appendOnce("a"))
			if err != nil || written != tc.written {
				t.Fatalf("written %v, err %v; want %v", written, err, tc.written)
			}
			if r.comment != tc.want || len(r.sets) != tc.sets {
				t.Errorf("comment %q after %d writes %q, want %q after %d", r.comment, len(r.sets), r.sets, tc.want, tc.sets)
			}
			if waits != tc.sets {
				t.Errorf("%d waits before a read-back for %d writes", waits, tc.sets)
			}
		})
	}
	r := &racyComments{failSet: errors.New("scontrol: Job has already finished")}
	if written, err := update(ctx, r, "1", appendOnce("a")); err == nil || written {
		t.Errorf("a refused write: written %v, err %v", written, err)
	}
	r = &racyComments{comment: "x"}
	if written, _ := update(ctx, r, "1", func(string) (string, bool) { return "y", false }); written || len(r.sets) != 0 {
		t.Errorf("next said no: written %v, sets %q", written, r.sets)
	}
}
