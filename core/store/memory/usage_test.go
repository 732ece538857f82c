package memory

import (
	"testing"

	"github.com/archmax-ai/archmax/core/store"
	"github.com/archmax-ai/archmax/core/store/storetest"
)

func TestUsageConformance(t *testing.T) {
	storetest.TestUsage(t, func(*testing.T) store.UsageCounter { return New() })
}
