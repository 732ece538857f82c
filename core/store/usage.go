package store

import (
	"context"
	"fmt"
	"math"
	"time"
)

// UsageTotals are a workflow's model usage in one UTC day (BU22-4): tokens (input + output)
// and cost in micro-USD (millionths of a dollar, the precision core/pricing rounds to), as
// integers so that concurrent additions sum exactly in every store.
type UsageTotals struct {
	Tokens   int64
	MicroUSD int64
}

// USD is the cost in USD.
func (u UsageTotals) USD() float64 { return float64(u.MicroUSD) / 1e6 }

// MicroUSD converts a cost in USD to micro-USD, rounded to the nearest.
func MicroUSD(usd float64) int64 { return int64(math.Round(usd * 1e6)) }

// UsageDay is the counter's day of t: its UTC date, "2006-01-02".
func UsageDay(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// UsageTTL is how long a day's counter is kept after its day (DynamoDB's TTL attribute;
// the memory and fs stores keep every counter): long enough to read yesterday's, short
// enough that the table does not grow with the days.
const UsageTTL = 3 * 24 * time.Hour

// UsageCounter keeps one atomic counter per (workflow, UTC day) (BU22-4): the per-workflow
// daily budget's. Implemented by the memory, fs and dynamodb stores.
type UsageCounter interface {
	// AddUsage adds tokens and microUSD (both ≥ 0) to the counter of workflow on day
	// (UsageDay's form) in one atomic step and returns the counter's totals after it: of
	// concurrent adders each sees a total that includes its own addition, and the last total
	// is the exact sum. Adding zero reads the totals. Errors: *UsageKeyError for an empty
	// workflow, a day that is not a date or a negative amount; the store's own.
	AddUsage(ctx context.Context, workflow, day string, tokens, microUSD int64) (UsageTotals, error)
}

// UsageKeyError is an AddUsage refused before the store is touched.
type UsageKeyError struct{ Workflow, Day, Reason string }

func (e *UsageKeyError) Error() string {
	return fmt.Sprintf("usage counter of workflow %q on day %q: %s", e.Workflow, e.Day, e.Reason)
}

// CheckUsageKey is AddUsage's argument check, shared by the stores.
func CheckUsageKey(workflow, day string, tokens, microUSD int64) error {
	switch {
	case workflow == "":
		return &UsageKeyError{workflow, day, "the workflow is empty"}
	case tokens < 0 || microUSD < 0:
		return &UsageKeyError{workflow, day, "a usage is never negative"}
	}
	if t, err := time.Parse(time.DateOnly, day); err != nil || t.Format(time.DateOnly) != day {
		return &UsageKeyError{workflow, day, "the day is not a date YYYY-MM-DD"}
	}
	return nil
}
