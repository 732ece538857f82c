package assembly

import (
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/archmax-ai/archmax/core/sandbox"
)

// MemoryLimit is the Go runtime's soft memory limit for a function (Issue 17): when Lambda says
// how much memory the function has (AWS_LAMBDA_FUNCTION_MEMORY_SIZE, MiB) and GOMEMLIMIT does
// not set one already (the runtime reads that itself at start), sandbox.MemoryLimitPercent of
// it. ok is false when there is nothing to set: outside Lambda, with GOMEMLIMIT, or with a size
// that is not a positive number of MiB.
func MemoryLimit(getenv func(string) string) (limit int64, ok bool) {
	if strings.TrimSpace(getenv("GOMEMLIMIT")) != "" {
		return 0, false
	}
	mib, err := strconv.ParseInt(strings.TrimSpace(getenv("AWS_LAMBDA_FUNCTION_MEMORY_SIZE")), 10, 64)
	if err != nil || mib <= 0 || mib > 1<<30 {
		return 0, false
	}
	return sandbox.GoMemoryLimit(mib << 20), true
}

// applyMemoryLimit sets MemoryLimit, when there is one, for the whole process.
func applyMemoryLimit(getenv func(string) string) {
	if limit, ok := MemoryLimit(getenv); ok {
		debug.SetMemoryLimit(limit)
	}
}
