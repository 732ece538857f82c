package conversefake

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/archmax-ai/archmax/core/model/scripted"
)

// Prompt-cache accounting (docs/authoring/scripted-model.md "Usage estimates and the prompt
// cache"): with a script's `usage: estimate` or WithUsageEstimate, the fake reports each
// answered call's usage from a token estimate of the request and Bedrock's published
// prompt-caching rules, kept per Server (one account) and per model id. The figures prove
// the fake's rules, not Bedrock's.

// LookBackBlocks is how many content blocks before a cachePoint the fake searches for a
// cached prefix (Anthropic's prompt-caching look-back, "about 20 blocks").
const LookBackBlocks = 20

// The TTLs a cachePoint may name: "5m" (the default, also for "") and "1h".
const (
	TTLDefault = 5 * time.Minute
	TTLLong    = time.Hour
)

// EstimateTokens is the fake's token estimate of one block's text: its characters (Unicode
// code points) divided by 4, rounded up — 0 for "", 1 for 1 to 4 characters.
func EstimateTokens(s string) int64 {
	return (int64(utf8.RuneCountInString(s)) + 3) / 4
}

// CacheMinimum is one row of the minimum-prefix table: model ids containing any of Match
// (case-insensitive) need a prefix of at least Tokens before a cachePoint caches it.
type CacheMinimum struct {
	Model  string   // the model family, as its documentation names it
	Match  []string // substrings of the Bedrock model id
	Tokens int64
	Source string // where the figure is published
}

// CacheMinimums is the table MinCacheTokens reads, first match wins. A model id no row
// matches gets DefaultCacheMinimum.
var CacheMinimums = []CacheMinimum{
	{Model: "Claude Opus 4.5, Opus 4.6", Match: []string{"claude-opus-4-5", "claude-opus-4-6"}, Tokens: 4096,
		Source: "Anthropic, Prompt caching: cache limitations (minimum cacheable prompt length); Bedrock model card"},
	{Model: "Claude Haiku 4.5", Match: []string{"claude-haiku-4-5"}, Tokens: 4096,
		Source: "Bedrock model card Claude Haiku 4.5 (min tokens per cache checkpoint); Anthropic, Prompt caching"},
	{Model: "Claude 3.5 Haiku", Match: []string{"claude-3-5-haiku"}, Tokens: 2048,
		Source: "Bedrock User Guide, Prompt caching: supported models table"},
	{Model: "Amazon Nova Micro, Lite, Pro, Premier", Match: []string{"amazon.nova-"}, Tokens: 1000,
		Source: "Bedrock User Guide, Prompt caching: supported models table"},
	{Model: "Claude Sonnet 4, 4.5, 4.6, Opus 4, 4.1, 3.7 Sonnet", Match: []string{"claude-sonnet-4", "claude-opus-4", "claude-3-7-sonnet"}, Tokens: 1024,
		Source: "Bedrock User Guide, Prompt caching: supported models table (Claude 3.7 Sonnet); Anthropic, Prompt caching"},
}

// DefaultCacheMinimum is the minimum of a model id CacheMinimums does not list (a test's
// "test-model"): Claude Sonnet's 1,024 tokens.
const DefaultCacheMinimum int64 = 1024

// MinCacheTokens returns the minimum prefix, in estimated tokens, that a cachePoint of
// modelID caches: the first CacheMinimums row whose Match the id contains, else
// DefaultCacheMinimum.
func MinCacheTokens(modelID string) int64 {
	id := strings.ToLower(modelID)
	for _, row := range CacheMinimums {
		for _, m := range row.Match {
			if strings.Contains(id, m) {
				return row.Tokens
			}
		}
	}
	return DefaultCacheMinimum
}

// promptCache is one Server's cache: per model id, the prefixes written, by hash.
type promptCache map[string]map[prefixHash]cacheEntry

type prefixHash [sha256.Size]byte

type cacheEntry struct {
	expires time.Time
	ttl     time.Duration
}

// cacheMarker is a cachePoint's place: after the first pos blocks of the prompt.
type cacheMarker struct {
	pos int
	ttl time.Duration
}

// prompt is a request flattened in Bedrock's prefix order — the tool specs, the system
// blocks, then each message's content blocks — with the cachePoints as markers between
// blocks. hash[k] identifies the first k blocks (their order, content, section, message
// and role); tokens[k] is their estimated size.
type prompt struct {
	hash    []prefixHash
	tokens  []int64
	markers []cacheMarker
}

func flatten(req *wireRequest) prompt {
	p := prompt{hash: []prefixHash{{}}, tokens: []int64{0}}
	add := func(key []byte, text string) {
		h := sha256.New()
		last := p.hash[len(p.hash)-1]
		h.Write(last[:])
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(key)))
		h.Write(n[:])
		h.Write(key)
		var next prefixHash
		h.Sum(next[:0])
		p.hash = append(p.hash, next)
		p.tokens = append(p.tokens, p.tokens[len(p.tokens)-1]+EstimateTokens(text))
	}
	mark := func(cp *wireCachePoint) {
		ttl := TTLDefault
		if cp.TTL == "1h" {
			ttl = TTLLong
		}
		p.markers = append(p.markers, cacheMarker{pos: len(p.hash) - 1, ttl: ttl})
	}
	if req.ToolConfig != nil {
		for _, t := range req.ToolConfig.Tools {
			if t.CachePoint != nil {
				mark(t.CachePoint)
				continue
			}
			key, _ := json.Marshal(struct {
				Section string
				Spec    *wireToolSpec
			}{"tool", t.ToolSpec})
			desc := ""
			if t.ToolSpec.Description != nil {
				desc = *t.ToolSpec.Description
			}
			add(key, t.ToolSpec.Name+desc+compact(t.ToolSpec.InputSchema.JSON))
		}
	}
	for _, b := range req.System {
		if b.CachePoint != nil {
			mark(b.CachePoint)
			continue
		}
		key, _ := json.Marshal(struct {
			Section string
			Text    *string
		}{"system", b.Text})
		add(key, deref(b.Text))
	}
	for i, m := range req.Messages {
		for _, b := range m.Content {
			if b.CachePoint != nil {
				mark(b.CachePoint)
				continue
			}
			key, _ := json.Marshal(struct {
				Message    int
				Role       string
				Text       *string
				ToolUse    *wireToolUse
				ToolResult *wireToolResult
			}{i, m.Role, b.Text, b.ToolUse, b.ToolResult})
			add(key, blockText(&b))
		}
	}
	return p
}

// blockText is what a message block's estimate counts: a text's text; a toolUse's name and
// input JSON; a toolResult's texts and JSON documents.
func blockText(b *wireBlock) string {
	switch {
	case b.Text != nil:
		return *b.Text
	case b.ToolUse != nil:
		return b.ToolUse.Name + compact(b.ToolUse.Input)
	case b.ToolResult != nil:
		var s strings.Builder
		for _, c := range b.ToolResult.Content {
			s.WriteString(deref(c.Text))
			s.WriteString(compact(c.JSON))
		}
		return s.String()
	}
	return ""
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// compact is raw JSON without insignificant space ("" for none).
func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// account applies the prompt-caching rules to one answered request of modelID at now and
// returns its input usage. Each cachePoint looks for the longest prefix written for this
// model and still live that ends at a block boundary at most LookBackBlocks blocks before it
// (a hit renews that entry's TTL); the longest such hit is read; the tokens from there to the
// last cachePoint whose prefix reaches MinCacheTokens are written (one entry per such
// cachePoint, each with its own TTL); everything else is fresh input. The writes are also
// returned by TTL, "1h" before "5m" (none when nothing was written): the part up to each
// written cachePoint from the one before goes at that cachePoint's TTL.
func (c promptCache) account(modelID string, p prompt, now time.Time) (scripted.Usage, []CacheWrite) {
	entries := c[modelID]
	if entries == nil {
		entries = map[prefixHash]cacheEntry{}
		c[modelID] = entries
	}
	for h, e := range entries {
		if !now.Before(e.expires) {
			delete(entries, h)
		}
	}
	read := 0
	for _, m := range p.markers {
		for pos := m.pos; pos >= 1 && pos >= m.pos-LookBackBlocks; pos-- {
			if e, ok := entries[p.hash[pos]]; ok {
				e.expires = now.Add(e.ttl)
				entries[p.hash[pos]] = e
				read = max(read, pos)
				break
			}
		}
	}
	written, minimum := read, MinCacheTokens(modelID)
	var long, short int64 // tokens written at 1h and at 5m
	for _, m := range p.markers {
		if m.pos <= read || p.tokens[m.pos] < minimum {
			continue
		}
		entries[p.hash[m.pos]] = cacheEntry{expires: now.Add(m.ttl), ttl: m.ttl}
		if m.pos > written {
			if m.ttl == TTLLong {
				long += p.tokens[m.pos] - p.tokens[written]
			} else {
				short += p.tokens[m.pos] - p.tokens[written]
			}
			written = m.pos
		}
	}
	total := p.tokens[len(p.tokens)-1]
	u := scripted.Usage{CacheReadInputTokens: p.tokens[read], CacheWriteInputTokens: p.tokens[written] - p.tokens[read]}
	u.InputTokens = total - u.CacheReadInputTokens - u.CacheWriteInputTokens
	var writes []CacheWrite
	if long > 0 {
		writes = append(writes, CacheWrite{TTL: "1h", Tokens: long})
	}
	if short > 0 {
		writes = append(writes, CacheWrite{TTL: "5m", Tokens: short})
	}
	return u, writes
}

// CacheWrite is the part of a call's cacheWriteInputTokens written with one TTL ("1h" or
// "5m"), as Converse's usage.cacheDetails reports it.
type CacheWrite struct {
	TTL    string
	Tokens int64
}

// outputEstimate is the estimated size of a scripted answer: its text's, and each tool
// call's name and input JSON's.
func outputEstimate(e *scripted.Entry) int64 {
	n := EstimateTokens(e.Text)
	for _, tc := range e.ToolCalls {
		n += EstimateTokens(tc.Name + compact(tc.Input))
	}
	return n
}
