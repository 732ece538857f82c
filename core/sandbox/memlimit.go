package sandbox

// MemoryLimitPercent is the share of a process's memory its host sets the Go runtime's soft
// memory limit to (runtime/debug.SetMemoryLimit): the Lambda assembly of the function's memory
// (AWS_LAMBDA_FUNCTION_MEMORY_SIZE), `archmax serve` of its --memory-limit or container limit,
// unless GOMEMLIMIT is set. A native builtin that allocates (Issue 17: the guards bound each to
// about 64 MiB) then makes the collector work harder before the process nears the OS's limit,
// instead of the heap doubling past it (GOGC's default pacing); the 15% left covers what the
// limit does not count exactly (goroutine stacks, GC metadata, the binary). The limit is soft:
// it bounds garbage, not what a run holds — the heap watchdog and the guards do that (CS-61).
const MemoryLimitPercent = 85

// GoMemoryLimit is the soft memory limit for a process allowed total bytes.
func GoMemoryLimit(total int64) int64 {
	return total/100*MemoryLimitPercent + total%100*MemoryLimitPercent/100 // floor(total * 0.85), no overflow
}
