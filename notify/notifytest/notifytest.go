// Package notifytest receives the webhooks that tests make vigil send.
package notifytest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// Hook is one webhook received: when, and its JSON body.
type Hook struct {
	At   time.Time
	Body map[string]any
}

// Recorder starts a webhook receiver for the test, closed at its end. It
// returns the receiver's URL and a function that returns the hooks
// received so far for one job (their "job" field), in order. A body that
// is not a JSON object fails the test.
func Recorder(t testing.TB) (url string, of func(job string) []Hook) {
	t.Helper()
	var mu sync.Mutex
	var got []Hook
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		var b map[string]any
		if err := json.Unmarshal(data, &b); err != nil {
			t.Errorf("webhook body %q: %v", data, err)
		}
		mu.Lock()
		got = append(got, Hook{time.Now(), b})
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/hook", func(job string) []Hook {
		mu.Lock()
		defer mu.Unlock()
		var out []Hook
		for _, h := range got {
			if h.Body["job"] == job {
				out = append(out, h)
			}
		}
		return out
	}
}
