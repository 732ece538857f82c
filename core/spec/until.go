package spec

import (
	"math"
	"regexp"
	"strconv"
	"time"
)

var (
	untilDuration = regexp.MustCompile(`^(\d+)(ms|s|m|h|d)$`)
	untilInstant  = regexp.MustCompile(`^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?(Z|([+-])(\d{2}):?(\d{2}))?)?$`)
	untilUnits    = map[string]time.Duration{"ms": time.Millisecond, "s": time.Second, "m": time.Minute, "h": time.Hour, "d": 24 * time.Hour}
	// latestInstant is the last instant FormatInstant renders with a four-digit year.
	latestInstant = time.Date(9999, 12, 31, 23, 59, 59, 999e6, time.UTC)
)

// WaitUntilForms are the accepted until forms, quoted in every wait refusal (spec 01 §7.2).
const WaitUntilForms = "a relative duration ('30m', '2h', '1d' — integer plus ms|s|m|h|d) or an absolute ISO-8601 instant ('2026-08-13T09:00:00Z')"

// WaitUntilError refuses an archmax_wait `until` (spec 01 §7.2, 02 §4.1). Error() is the
// detail ("'until' is empty.", "'until' must be a positive duration; got '<v>'.",
// "'until' value '<v>' is neither a duration nor an instant."); Refusal() is the tool's
// whole refusal text.
type WaitUntilError struct {
	Detail string
}

func (e *WaitUntilError) Error() string { return e.Detail }

// Refusal is the archmax_wait refusal: `archmax_wait rejected: <detail> Expected <forms>.`
func (e *WaitUntilError) Refusal() string {
	return WaitTool + " rejected: " + e.Detail + " Expected " + WaitUntilForms + "."
}

// ResolveWaitUntil resolves archmax_wait's `until` against now (spec 01 §7.2): the
// trimmed value is a positive relative duration ^(\d+)(ms|s|m|h|d)$ added to now, or an
// absolute ISO-8601 date or date-time (^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?
// (Z|[+-]\d{2}:?\d{2})?)?$) naming a real calendar instant, read as UTC when it has no
// zone. The result is in UTC, truncated to milliseconds; a past instant is returned
// as given. Anything else, a duration past what time.Duration holds (about 292
// years), or an instant past year 9999 (which FormatInstant could not render), is
// *WaitUntilError.
func ResolveWaitUntil(now time.Time, until string) (time.Time, error) {
	value := JSTrim(until)
	if value == "" {
		return time.Time{}, &WaitUntilError{Detail: "'until' is empty."}
	}
	neither := &WaitUntilError{Detail: "'until' value '" + value + "' is neither a duration nor an instant."}
	if m := untilDuration.FindStringSubmatch(value); m != nil {
		amount, err := strconv.ParseUint(m[1], 10, 64)
		if err == nil && amount == 0 {
			return time.Time{}, &WaitUntilError{Detail: "'until' must be a positive duration; got '" + value + "'."}
		}
		unit := untilUnits[m[2]]
		if err != nil || amount > uint64(math.MaxInt64/unit) {
			return time.Time{}, neither
		}
		return now.UTC().Add(time.Duration(amount) * unit).Truncate(time.Millisecond), nil
	}
	if at, ok := parseInstant(value); ok {
		return at, nil
	}
	return time.Time{}, neither
}

// parseInstant reads the ISO-8601 instant form of `until`, rejecting impossible
// calendar days, times and offsets rather than rolling them over.
func parseInstant(value string) (time.Time, bool) {
	m := untilInstant.FindStringSubmatch(value)
	if m == nil {
		return time.Time{}, false
	}
	year, month, day := atoi(m[1]), atoi(m[2]), atoi(m[3])
	hour, minute, second := atoi(m[4]), atoi(m[5]), atoi(m[6])
	nanos := 0
	if m[7] != "" {
		frac := (m[7][1:] + "000000000")[:9]
		nanos = atoi(frac) / 1e6 * 1e6
	}
	if month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month) || hour > 23 || minute > 59 || second > 59 {
		return time.Time{}, false
	}
	offset := 0
	if m[9] != "" {
		oh, om := atoi(m[10]), atoi(m[11])
		if oh > 23 || om > 59 {
			return time.Time{}, false
		}
		offset = oh*3600 + om*60
		if m[9] == "-" {
			offset = -offset
		}
	}
	at := time.Date(year, time.Month(month), day, hour, minute, second, nanos, time.UTC).Add(-time.Duration(offset) * time.Second)
	return at, !at.After(latestInstant)
}

// FormatInstant renders t as JavaScript's toISOString does: UTC,
// YYYY-MM-DDTHH:MM:SS.sssZ (spec 01 §7.2, resumeAt).
func FormatInstant(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}
