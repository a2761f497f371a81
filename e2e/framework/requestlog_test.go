package framework

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The log records each request with its agent and the service's answer,
// and a service that is down is answered 502, logged as not applied.
func TestRequestLog(t *testing.T) {
	svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			http.Error(w, "silence not found", http.StatusNotFound)
			return
		}
		_, _ = w.Write([]byte(`{"silenceID":"x"}`))
	}))
	l, err := StartRequestLog(svc.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	send := func(method, path string) int {
		req, _ := http.NewRequest(method, l.URL+path, strings.NewReader(`{}`))
		req.Header.Set("User-Agent", "upshift-upgrade-scheduler/v1 (sched-0)")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = res.Body.Close()
		return res.StatusCode
	}
	if got := send(http.MethodPost, "/api/v2/silences"); got != http.StatusOK {
		t.Fatalf("POST answered %d", got)
	}
	send(http.MethodDelete, "/api/v2/silence/x")
	svc.Close()
	if got := send(http.MethodPost, "/api/v2/silences"); got != http.StatusBadGateway {
		t.Fatalf("POST to a stopped service answered %d, want 502", got)
	}
	reqs := l.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests logged: %+v", len(reqs), reqs)
	}
	for i, want := range []struct {
		method, path string
		status       int
		applied      bool
	}{
		{http.MethodPost, "/api/v2/silences", 200, true},
		{http.MethodDelete, "/api/v2/silence/x", 404, false},
		{http.MethodPost, "/api/v2/silences", 502, false},
	} {
		r := reqs[i]
		if r.Method != want.method || r.Path != want.path || r.Status != want.status || r.Applied() != want.applied ||
			r.UserAgent != "upshift-upgrade-scheduler/v1 (sched-0)" || r.Time.IsZero() {
			t.Errorf("request %d: %+v, want %+v", i, r, want)
		}
	}
}
