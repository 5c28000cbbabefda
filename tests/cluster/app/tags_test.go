package app

import (
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	cases := map[string]Behaviour{
		"1.0":                  {},
		"1.0-pullfail":         {PullFail: true},
		"2.0-slow5":            {Slow: 5 * time.Second},
		"2.0-ready3-drain5":    {Ready: 3 * time.Second, Drain: 5 * time.Second},
		"2.0-drain4-slow2":     {Drain: 4 * time.Second, Slow: 2 * time.Second},
		"1.0-ignoreterm-pull2": {IgnoreTerm: true, Pull: 2 * time.Second},
		"1.0-crash":            {Crash: true},
		"crash":                {}, // the first word is the version
		"1.0-readyX":           {}, // not a number: part of the version
	}
	for tag, want := range cases {
		if got := Parse(tag); got != want {
			t.Errorf("Parse(%q) = %+v, want %+v", tag, got, want)
		}
	}
}

func TestTagOf(t *testing.T) {
	cases := map[string]string{
		"registry.example/app:1.0-ready3":         "1.0-ready3",
		"localhost:5000/app":                      "",
		"localhost:5000/app:2.0":                  "2.0",
		"app@sha256:0123":                         "",
		"registry.example/app:1.0-crash@sha256:0": "1.0-crash",
	}
	for ref, want := range cases {
		if got := TagOf(ref); got != want {
			t.Errorf("TagOf(%q) = %q, want %q", ref, got, want)
		}
	}
}
