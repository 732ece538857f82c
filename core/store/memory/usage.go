package memory

import (
	"context"

	"github.com/archmax-ai/archmax/core/store"
)

var _ store.UsageCounter = (*Store)(nil)

// AddUsage implements store.UsageCounter under the store's lock.
func (s *Store) AddUsage(ctx context.Context, workflow, day string, tokens, microUSD int64) (store.UsageTotals, error) {
	if err := ctx.Err(); err != nil {
		return store.UsageTotals{}, err
	}
	if err := store.CheckUsageKey(workflow, day, tokens, microUSD); err != nil {
		return store.UsageTotals{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.usage == nil {
		s.usage = map[[2]string]store.UsageTotals{}
	}
	k := [2]string{workflow, day}
	t := s.usage[k]
	t.Tokens += tokens
	t.MicroUSD += microUSD
	s.usage[k] = t
	return t, nil
}
