package spec

import (
	"errors"
	"testing"
	"time"
)

// Spec 01 §7.2, 02 §4.1.
func TestResolveWaitUntil(t *testing.T) {
	now := time.Date(2026, 8, 13, 9, 0, 0, 123456789, time.FixedZone("CEST", 2*3600))
	tests := []struct{ until, want string }{
		{"30m", "2026-08-13T07:30:00.123Z"},
		{" 2h ", "2026-08-13T09:00:00.123Z"},
		{"1d", "2026-08-14T07:00:00.123Z"},
		{"45s", "2026-08-13T07:00:45.123Z"},
		{"1500ms", "2026-08-13T07:00:01.623Z"},
		{"2026-08-20", "2026-08-20T00:00:00.000Z"},
		{"2026-08-20T09:00:00Z", "2026-08-20T09:00:00.000Z"},
		{"2026-08-20T09:00", "2026-08-20T09:00:00.000Z"},
		{"2026-08-20 09:00:30", "2026-08-20T09:00:30.000Z"},
		{"2026-08-20T09:00:00.98765+02:00", "2026-08-20T07:00:00.987Z"},
		{"2026-08-20T09:00:00-0530", "2026-08-20T14:30:00.000Z"},
		{"2024-02-29T23:59:59.999Z", "2024-02-29T23:59:59.999Z"},
		{"9999-12-31T23:59:59.999Z", "9999-12-31T23:59:59.999Z"},
		{"2020-01-01T00:00:00Z", "2020-01-01T00:00:00.000Z"}, // past: stored as given
	}
	for _, tt := range tests {
		got, err := ResolveWaitUntil(now, tt.until)
		if err != nil || FormatInstant(got) != tt.want {
			t.Errorf("ResolveWaitUntil(%q) = %s, %v; want %s", tt.until, FormatInstant(got), err, tt.want)
		}
	}
}

func TestResolveWaitUntilRefusals(t *testing.T) {
	neither := func(v string) string { return "'until' value '" + v + "' is neither a duration nor an instant." }
	tests := []struct{ until, want string }{
		{"", "'until' is empty."},
		{"   ", "'until' is empty."},
		{"0m", "'until' must be a positive duration; got '0m'."},
		{"000s", "'until' must be a positive duration; got '000s'."},
		{"1w", neither("1w")},
		{"-5m", neither("-5m")},
		{"1.5h", neither("1.5h")},
		{"30 m", neither("30 m")},
		{"tomorrow", neither("tomorrow")},
		{"2026-02-30", neither("2026-02-30")},
		{"2026-13-01", neither("2026-13-01")},
		{"2026-08-20T24:00", neither("2026-08-20T24:00")},
		{"2026-08-20T09:00:00+25:00", neither("2026-08-20T09:00:00+25:00")},
		{"2026-08-20T09", neither("2026-08-20T09")},
		{"20260820", neither("20260820")},
		{"99999999999999999999d", neither("99999999999999999999d")},
		{"3000000d", neither("3000000d")},
		{"9999-12-31T23:00:00-05:00", neither("9999-12-31T23:00:00-05:00")},
	}
	for _, tt := range tests {
		_, err := ResolveWaitUntil(time.Now(), tt.until)
		var typed *WaitUntilError
		if !errors.As(err, &typed) || err.Error() != tt.want {
			t.Errorf("ResolveWaitUntil(%q) error = %v, want %q", tt.until, err, tt.want)
		}
	}
	_, err := ResolveWaitUntil(time.Now(), "soon")
	want := "archmax_wait rejected: 'until' value 'soon' is neither a duration nor an instant. Expected a relative duration ('30m', '2h', '1d' — integer plus ms|s|m|h|d) or an absolute ISO-8601 instant ('2026-08-13T09:00:00Z')."
	if got := err.(*WaitUntilError).Refusal(); got != want {
		t.Errorf("Refusal\n got %q\nwant %q", got, want)
	}
}

func TestFormatInstant(t *testing.T) {
	at := time.Date(2026, 3, 1, 10, 30, 5, 7_999_999, time.FixedZone("x", 3600))
	if got := FormatInstant(at); got != "2026-03-01T09:30:05.007Z" {
		t.Errorf("FormatInstant = %s", got)
	}
}
