package spec

import "testing"

func TestFormatJSNumberMatchesECMAScript(t *testing.T) {
	cases := []struct {
		f float64
		s string
	}{
		{1, "1"}, {1.5, "1.5"}, {1e21, "1e+21"}, {123456789012345680000, "123456789012345680000"},
		{0.000001, "0.000001"}, {1e-7, "1e-7"}, {-2.5e-8, "-2.5e-8"}, {0.1, "0.1"}, {100, "100"},
		{1.2345e25, "1.2345e+25"}, {-0.0, "0"},
	}
	for _, c := range cases {
		if got := FormatJSNumber(c.f); got != c.s {
			t.Errorf("FormatJSNumber(%v) = %s, want %s", c.f, got, c.s)
		}
	}
}
