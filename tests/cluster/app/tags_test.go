package app

import (
	"slices"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	cases := map[string]Behaviour{
		"1.0":                          {},
		"1.0-pullfail":                 {PullFail: true},
		"2.0-slow5":                    {Slow: 5 * time.Second},
		"2.0-ready3-drain5":            {Ready: 3 * time.Second, Drain: 5 * time.Second},
		"2.0-drain4-slow2":             {Drain: 4 * time.Second, Slow: 2 * time.Second},
		"1.0-ignoreterm-pull2":         {IgnoreTerm: true, Pull: 2 * time.Second},
		"1.0-crash":                    {Crash: true},
		"crash":                        {}, // the first word is the version
		"1.0-readyX":                   {}, // not a number: part of the version
		"2.0-port8081":                 {Port: 8081},
		"2.0-nohealth":                 {NoHealth: true},
		"2.0-port9090-nohealth-ready2": {Port: 9090, NoHealth: true, Ready: 2 * time.Second},
		"2.0-port0":                    {}, // not a port: part of the version
		"2.0-port70000":                {},
		"2.0-portX":                    {},
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

func TestPorts(t *testing.T) {
	declared := []int{8080, 9000}
	if got := Parse("1.0").Ports(declared); !slices.Equal(got, declared) {
		t.Errorf("no -portN: Ports = %v, want the declared %v", got, declared)
	}
	if got := Parse("2.0-port8081").Ports(declared); !slices.Equal(got, []int{8081}) {
		t.Errorf("-port8081: Ports = %v, want only [8081]", got)
	}
	if got := Parse("1.0").Ports(nil); len(got) != 0 {
		t.Errorf("nothing declared: Ports = %v, want none", got)
	}
	if got := Parse("1.0-port80").Ports(nil); !slices.Equal(got, []int{80}) {
		t.Errorf("nothing declared, -port80: Ports = %v, want [80]", got)
	}
}
