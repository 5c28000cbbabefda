package app

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func get(t *testing.T, s *server, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(body)
}

func newServer(tag string, started time.Time) *server {
	return &server{pod: "ns/p", container: "app", image: "web:" + tag, behaviour: Parse(tag),
		started: started, log: &criLog{w: io.Discard}}
}

func TestHealthPaths(t *testing.T) {
	long := time.Now().Add(-time.Hour)
	cases := []struct {
		tag, path string
		started   time.Time
		want      int
	}{
		{"1.0", "/", long, 200},
		{"1.0", "/ready", long, 200},
		{"1.0", "/healthz", long, 200},
		{"1.0-ready30", "/ready", time.Now(), 503},
		{"1.0-ready30", "/readyz", time.Now(), 503},
		{"1.0-ready30", "/healthz", time.Now(), 200}, // liveness is not readiness
		{"1.0-ready30", "/", time.Now(), 200},
		{"2.0-nohealth", "/ready", long, 404},
		{"2.0-nohealth", "/readyz", long, 404},
		{"2.0-nohealth", "/healthz", long, 404},
		{"2.0-nohealth", "/livez", long, 404},
		{"2.0-nohealth", "/health", long, 404},
		{"2.0-nohealth", "/", long, 200}, // the app itself still answers
		{"2.0-nohealth", "/prestop", long, 200},
	}
	for _, c := range cases {
		code, body := get(t, newServer(c.tag, c.started), c.path)
		if code != c.want {
			t.Errorf("tag %s GET %s = %d (%q), want %d", c.tag, c.path, code, body, c.want)
		}
		if code == 200 && !strings.Contains(body, "pod=ns/p container=app image=web:"+c.tag) {
			t.Errorf("tag %s GET %s: body %q does not name pod, container and image", c.tag, c.path, body)
		}
	}
}

func TestDrainingIsNotReady(t *testing.T) {
	s := newServer("1.0", time.Now().Add(-time.Hour))
	s.draining.Store(true)
	if code, _ := get(t, s, "/ready"); code != 503 {
		t.Errorf("draining: GET /ready = %d, want 503", code)
	}
}
