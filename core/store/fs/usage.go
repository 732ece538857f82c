package fs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	iofs "io/fs"
	"path"
	"path/filepath"

	"github.com/archmax-ai/archmax/core/store"
)

// usageDir holds the daily usage counters, one file per (workflow, day):
// usage/<workflow>/<day>.json, replaced atomically under the directory's flock.
const usageDir = "usage"

var _ store.UsageCounter = (*Store)(nil)

type usageRecord struct {
	Tokens   int64 `json:"tokens"`
	MicroUSD int64 `json:"microUsd"`
}

// AddUsage implements store.UsageCounter: read, add and replace the counter's file under an
// exclusive flock(2) of its workflow's directory, so adders in other goroutines and other
// processes serialise (BU22-4).
func (s *Store) AddUsage(ctx context.Context, workflow, day string, tokens, microUSD int64) (store.UsageTotals, error) {
	if err := ctx.Err(); err != nil {
		return store.UsageTotals{}, err
	}
	if err := store.CheckUsageKey(workflow, day, tokens, microUSD); err != nil {
		return store.UsageTotals{}, err
	}
	dir := path.Join(usageDir, sessionDirName(workflow)) // the session folders' safe encoding
	unlock, err := lock(s.root, dir)
	if err != nil {
		return store.UsageTotals{}, err
	}
	defer unlock()
	name := path.Join(dir, day+".json")
	var r usageRecord
	data, err := s.root.ReadFile(name)
	switch {
	case err == nil:
		if err := json.Unmarshal(data, &r); err != nil || r.Tokens < 0 || r.MicroUSD < 0 {
			if err == nil {
				err = errors.New("a total is negative")
			}
			// nothing is added to a counter that cannot be read: the file is left for a person
			return store.UsageTotals{}, fmt.Errorf("usage counter %s is damaged (%v): delete it to count the day from zero again, or repair it to {\"tokens\": <n>, \"microUsd\": <n>}",
				filepath.Join(s.root.Name(), filepath.FromSlash(name)), err)
		}
	case !errors.Is(err, iofs.ErrNotExist):
		return store.UsageTotals{}, err
	}
	if tokens == 0 && microUSD == 0 {
		return store.UsageTotals{Tokens: r.Tokens, MicroUSD: r.MicroUSD}, nil
	}
	r.Tokens += tokens
	r.MicroUSD += microUSD
	data, _ = json.Marshal(r)
	if err := replaceFile(s.root, name, data); err != nil {
		return store.UsageTotals{}, fmt.Errorf("usage counter %s: %w", name, err)
	}
	return store.UsageTotals{Tokens: r.Tokens, MicroUSD: r.MicroUSD}, nil
}
