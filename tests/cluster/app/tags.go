// Package app is the simulated application the local cluster's runtime starts for every
// running container: a small HTTP server whose behaviour follows the image tag.
package app

import (
	"strconv"
	"strings"
	"time"
)

// Behaviour is what an image tag asks of the runtime and of the app. A tag is read as
// "-"-separated words after its first word, so behaviours combine:
// "2.0-ready3-drain5" starts unready for 3 s and drains 5 s after SIGTERM.
type Behaviour struct {
	PullFail   bool          // -pullfail: PullImage fails
	Pull       time.Duration // -pullN: PullImage takes N seconds
	Slow       time.Duration // -slowN: StartContainer takes N seconds
	Crash      bool          // -crash: the app exits with code 1 two seconds after start
	Ready      time.Duration // -readyN: readiness paths answer 503 for N seconds after start
	Drain      time.Duration // -drainN: after SIGTERM the app keeps serving N seconds, then exits
	IgnoreTerm bool          // -ignoreterm: SIGTERM is logged and ignored (PID 1 without a handler)
	Port       int           // -portN: the app serves port N instead of the container's declared ports
	NoHealth   bool          // -nohealth: the health paths (HealthPaths) answer 404
}

// Ports is what the image serves: the container's declared TCP ports, or only port N for -portN
// (a release that moved its port). A probe or hook on any other port finds nothing listening.
func (b Behaviour) Ports(declared []int) []int {
	if b.Port > 0 {
		return []int{b.Port}
	}
	return declared
}

// TagOf returns the tag of an image reference ("" for digest-only references).
func TagOf(ref string) string {
	if i := strings.Index(ref, "@"); i >= 0 {
		ref = ref[:i]
	}
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		return ref[i+1:]
	}
	return ""
}

// Parse reads the behaviour words of a tag; unknown words are part of the version.
func Parse(tag string) Behaviour {
	var b Behaviour
	words := strings.Split(tag, "-")
	for _, w := range words[1:] {
		switch w {
		case "pullfail":
			b.PullFail = true
		case "crash":
			b.Crash = true
		case "ignoreterm":
			b.IgnoreTerm = true
		case "nohealth":
			b.NoHealth = true
		default:
			for _, k := range []struct {
				prefix string
				dst    *time.Duration
			}{{"pull", &b.Pull}, {"slow", &b.Slow}, {"ready", &b.Ready}, {"drain", &b.Drain}} {
				if rest, ok := strings.CutPrefix(w, k.prefix); ok && rest != "" {
					if n, err := strconv.Atoi(rest); err == nil && n >= 0 {
						*k.dst = time.Duration(n) * time.Second
					}
				}
			}
			if rest, ok := strings.CutPrefix(w, "port"); ok {
				if n, err := strconv.Atoi(rest); err == nil && n > 0 && n < 65536 {
					b.Port = n
				}
			}
		}
	}
	return b
}
