package spec

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// The keys each strict mapping of workflow.yaml takes, for the "did you mean" hint of an
// unknown key (V-01). The readers in parse.go switch on the same keys; the editor schema's
// test (TestUnknownKeySuggestionsCoverEveryKey) holds every list to the keys it declares.
var (
	rootKeys           = []string{"title", "instructions", "disabled", "runtime", "settings", "tests", "tools", "skills", "mounts", "extensions", "metadata", "states"}
	runtimeKeys        = []string{"engine", "version"}
	settingsKeys       = []string{"model", "timeoutMs", "memoryLimitBytes", "maxPtcCalls", "maxResultChars", "prompt_cache"}
	promptCacheKeys    = []string{"enabled", "ttl"}
	testsKeys          = []string{"caseTimeoutMs", "maxConcurrency", "judge"}
	judgeKeys          = []string{"model", "modelOptions"}
	modelOptionsKeys   = []string{"temperature", "maxTokens"}
	stateKeys          = []string{"type", "title", "instructions", "summary", "evidence", "approvers", "triggers", "budget", "model", "on_error", "tools", "skills", "mounts", "requires", "metadata", "transitions", "script"}
	budgetKeys         = []string{"maxTurns", "timeoutMs", "maxParks"}
	transitionKeys     = []string{"to", "description", "type"}
	toolObjectKeys     = []string{"tool", "paths", "args", "connection", "source"}
	mountGrantKeys     = []string{"mount", "access"}
	signatureEntryKeys = []string{"name", "type", "description"}
	// triggerKeys are the keys a trigger declaration's reader takes (its others are kept
	// for the host, R-08); 'entry' and 'name' are refused, never suggested.
	triggerKeys = []string{"session", "message", "connection", "description", "requires", "returns"}
)

// keyHint is the hint for an unknown key: "did you mean '<k>'?" when exactly one key of
// known is close to it, else "" (the code's own hint applies). Close is a difference in
// case only, or a small editDistance between the lower-cased keys: one edit for a known
// key of 3 or 4 characters, two from 5 characters (shorter keys are close only by case,
// since two edits turn any two-letter key into any other).
func keyHint(key string, known []string) string {
	match := ""
	for _, k := range known {
		if !closeKey(key, k) {
			continue
		}
		if match != "" {
			return "" // two candidates: a guess would mislead
		}
		match = k
	}
	if match == "" {
		return ""
	}
	return fmt.Sprintf("did you mean '%s'?", match)
}

func closeKey(key, known string) bool {
	if strings.EqualFold(key, known) {
		return true
	}
	limit := 0
	switch n := utf8.RuneCountInString(known); {
	case n >= 5:
		limit = 2
	case n >= 3:
		limit = 1
	}
	return limit > 0 && editDistance(strings.ToLower(key), strings.ToLower(known)) <= limit
}

// editDistance is the optimal-string-alignment distance between a and b, in runes: the
// Levenshtein distance (insertions, deletions, substitutions) with a swap of two adjacent
// characters — the commonest typo — counting as one edit too.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	rows := [3][]int{make([]int, len(rb)+1), make([]int, len(rb)+1), make([]int, len(rb)+1)}
	for j := range rows[1] {
		rows[1][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		before, prev, cur := rows[0], rows[1], rows[2]
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], before[j-2]+1)
			}
		}
		rows = [3][]int{prev, cur, before}
	}
	return rows[1][len(rb)]
}
