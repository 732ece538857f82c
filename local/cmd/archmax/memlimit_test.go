package main

import (
	"errors"
	"testing"
)

// Issue 17: archmax serve's --memory-limit — a size as given, off, or auto (85% of the
// container's limit, none without one); GOMEMLIMIT always wins.
func TestMemoryLimitFlag(t *testing.T) {
	noFile := func(string) ([]byte, error) { return nil, errors.New("absent") }
	file := func(content string) func(string) ([]byte, error) {
		return func(name string) ([]byte, error) {
			if name == cgroupLimits[0] {
				return []byte(content), nil
			}
			return nil, errors.New("absent")
		}
	}
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "GOMEMLIMIT" {
				return v
			}
			return ""
		}
	}
	for _, tc := range []struct {
		value, gomemlimit string
		read              func(string) ([]byte, error)
		want              int64
		err               bool
	}{
		{"2GiB", "", noFile, 2 << 30, false},
		{"1500MiB", "", noFile, 1500 << 20, false},
		{"1048576", "", noFile, 1 << 20, false},
		{"off", "", file("1073741824\n"), 0, false},
		{"auto", "", file("1073741824\n"), 912680550, false},
		{"auto", "", file("max\n"), 0, false},
		{"auto", "", noFile, 0, false},
		{"2GiB", "900MiB", noFile, 0, false},
		{"lots", "", noFile, 0, true},
		{"-1G", "", noFile, 0, true},
	} {
		got, err := memoryLimit(tc.value, env(tc.gomemlimit), tc.read)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("%q (GOMEMLIMIT %q): got %d, %v; want %d", tc.value, tc.gomemlimit, got, err, tc.want)
		}
	}
}
