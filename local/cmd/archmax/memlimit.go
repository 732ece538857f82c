package main

import (
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/archmax-ai/archmax/core/sandbox"
)

// withMemoryLimit gives cmd (archmax serve) the --memory-limit flag and sets the Go runtime's
// soft memory limit from it before the command runs (Issue 17): as the Lambda assembly does
// for a function's memory, so a native builtin a sandboxed script runs (the guards bound each
// to about 64 MiB) makes the collector work harder before the process nears its limit instead of
// the heap doubling past it.
func withMemoryLimit(cmd *cobra.Command) *cobra.Command {
	value := cmd.Flags().String("memory-limit", "auto", "the Go runtime's soft memory limit: a size (2GiB, 1500MiB, bytes), "+
		"off, or auto: "+strconv.Itoa(sandbox.MemoryLimitPercent)+"% of the container's memory limit when there is one; GOMEMLIMIT wins")
	run := cmd.PreRunE
	cmd.PreRunE = func(c *cobra.Command, args []string) error {
		limit, err := memoryLimit(*value, os.Getenv, os.ReadFile)
		if err != nil {
			return usageError{err}
		}
		if limit > 0 {
			debug.SetMemoryLimit(limit)
		}
		if run != nil {
			return run(c, args)
		}
		return nil
	}
	return cmd
}

// cgroupLimits are the files a container's memory limit is read from (cgroup v2, then v1).
var cgroupLimits = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// memoryLimit is the limit --memory-limit asks for: 0 (leave the runtime's) for off, when
// GOMEMLIMIT is set, or for auto without a container limit; a size as given; auto with a
// container limit, sandbox.MemoryLimitPercent of it.
func memoryLimit(value string, getenv func(string) string, readFile func(string) ([]byte, error)) (int64, error) {
	if strings.TrimSpace(getenv("GOMEMLIMIT")) != "" {
		return 0, nil
	}
	switch v := strings.TrimSpace(value); strings.ToLower(v) {
	case "off", "0":
		return 0, nil
	case "auto", "":
		for _, f := range cgroupLimits {
			b, err := readFile(f)
			if err != nil {
				continue
			}
			n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
			if err != nil || n <= 0 || n >= 1<<60 { // "max", or v1's "no limit" (a huge number)
				return 0, nil
			}
			return sandbox.GoMemoryLimit(n), nil
		}
		return 0, nil
	default:
		return parseSize(v)
	}
}

// parseSize reads a byte size: digits with an optional B, KiB, MiB, GiB or TiB (also K, M, G, T).
func parseSize(s string) (int64, error) {
	units := []struct {
		suffix string
		shift  uint
	}{{"KiB", 10}, {"MiB", 20}, {"GiB", 30}, {"TiB", 40}, {"K", 10}, {"M", 20}, {"G", 30}, {"T", 40}, {"B", 0}}
	num, shift := s, uint(0)
	for _, u := range units {
		if strings.HasSuffix(strings.ToUpper(s), strings.ToUpper(u.suffix)) {
			num, shift = strings.TrimSpace(s[:len(s)-len(u.suffix)]), u.shift
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)>>shift {
		return 0, fmt.Errorf("--memory-limit %q: want a size such as 2GiB or 1500MiB, off, or auto", s)
	}
	return n << shift, nil
}
