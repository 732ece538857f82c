package memory

import (
	"testing"

	"github.com/archmax-ai/archmax/core/store"
	"github.com/archmax-ai/archmax/core/store/storetest"
)

func TestSessionDeleteConformance(t *testing.T) {
	storetest.TestSessionDelete(t, func(*testing.T) storetest.Stores {
		return storetest.Stores{Log: New(), Files: NewFiles()}
	})
}

func TestHeadExpiryConformance(t *testing.T) {
	storetest.TestHeadExpiry(t, func(*testing.T) store.Log { return New() })
}

func TestIdempotencyTiedConformance(t *testing.T) {
	storetest.TestIdempotencyTiedToSession(t, func(*testing.T) store.Log { return New() })
}
