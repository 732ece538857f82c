package session

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/archmax-ai/archmax/core/spec"

	"github.com/archmax-ai/archmax/core/store"
)

// RunFunc runs one engine call for a host (e.g. under its invocation's deadline).
type RunFunc func(ctx context.Context, call func(context.Context) (*Outcome, error)) (*Outcome, error)

// SweepResult counts what one Sweep did: Due heads found, Woken sessions resumed, Skipped
// wakes that were no-ops (answered or not yet due by the time the lease was taken), and
// Failed wakes (their errors joined in Sweep's error; the next sweep retries them).
type SweepResult struct {
	Due, Woken, Skipped, Failed int
	// Continued counts stranded running sessions carried on (see StrandedAfter).
	Continued int
	// Published counts sessions whose owed notifications were published (SweepOutbox).
	Published int `json:",omitempty"`
}

// sweepLookahead is how many due heads per wake a sweep reads, so failing parks at the head
// of the queue do not hide the ones behind them.
const sweepLookahead = 4

// Sweep wakes sessions whose timed park is overdue at now (DESIGN.md §5: the safety net
// behind the scheduled wakes — a lost, failed or never-created schedule is caught by the
// next sweep), and continues running sessions stranded past StrandedAfter (DESIGN.md §4: the
// net behind lost continuations). It reads the due heads from log.ListDueParks, oldest due first, and wakes
// each one's live park through the engine engineFor returns for the head's workflow, until
// limit sessions were woken or skipped; failed wakes do not count, and up to
// sweepLookahead×limit heads are read, so parks that fail every time (a removed workflow)
// cannot starve the rest. A session another writer holds counts as failed and is retried
// next time. run, when not nil, runs each wake call (a host's deadline and continuation
// wrapper, functions/handlers/continuation.Runner.Run); nil calls it directly. Errors: the
// listing's, or every failed wake joined.
func Sweep(ctx context.Context, log store.Log, engineFor func(ctx context.Context, workflow string) (*Engine, error), now time.Time, limit int, run RunFunc) (SweepResult, error) {
	if run == nil {
		run = func(ctx context.Context, call func(context.Context) (*Outcome, error)) (*Outcome, error) {
			return call(ctx)
		}
	}
	if limit <= 0 {
		limit = store.DefaultLimit
	}
	heads, err := log.ListDueParks(ctx, spec.FormatInstant(now), sweepLookahead*limit)
	if err != nil {
		return SweepResult{}, fmt.Errorf("list due parks: %w", err)
	}
	res := SweepResult{Due: len(heads)}
	var errs []error
	for _, h := range heads {
		if res.Woken+res.Skipped+res.Continued == limit {
			break
		}
		if ctx.Err() != nil {
			errs = append(errs, ctx.Err())
			break
		}
		eng, err := engineFor(ctx, h.Workflow)
		if err == nil {
			var skipped bool
			stranded := Status(h.Status) == StatusRunning
			_, err = run(ctx, func(ctx context.Context) (*Outcome, error) {
				if stranded {
					out, s, err := eng.Continue(ctx, h.SessionID, "")
					skipped = s != nil
					return out, err
				}
				out, s, err := eng.Wake(ctx, h.SessionID, "")
				skipped = s != nil
				return out, err
			})
			if err == nil && skipped {
				res.Skipped++
				continue
			}
			if err == nil && stranded {
				res.Continued++
				continue
			}
		}
		if err != nil {
			res.Failed++
			errs = append(errs, fmt.Errorf("wake %s: %w", h.SessionID, err))
			continue
		}
		res.Woken++
	}
	return res, errors.Join(errs...)
}
