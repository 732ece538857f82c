package session

import (
	"os"
	"slices"
	"strings"

	"github.com/archmax-ai/archmax/core/machine"
	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/spec"
)

// Prompt caching across a long session (spec 02 §14.4; docs/DECISIONS.md PC23-9…): a
// request carries at most model.MaxCachePoints cachePoints —
//
//  1. after the tool specs every agent state of the workflow offers (they come first, in
//     name order, so a state change still reads them), else after all the tools;
//  2. after the static system prompt;
//  3. at the end of the conversation as it stands — the part no later step changes: the
//     next answer is appended after it — moved forward every step;
//  4. the previous step's conversation marker, kept only when the step added more blocks
//     than the provider's look-back (lookBackBlocks) searches back from 3.
//
// The per-call content (02 §14.3: the state's instructions, edges, skills, mounts and the
// clock line) goes where perCallFor says: for Claude, at the end of the request, after marker
// 3 (a state change or a clock tick leaves the conversation cached); for other models, and in
// a reply-only call (parks.go appends its directive to the system prompt's last block), after
// marker 2 in the system prompt.

// lookBackBlocks is how many content blocks before a cachePoint the provider searches for a
// cached prefix (Anthropic's prompt caching: "about 20 blocks").
const lookBackBlocks = 20

// Where the per-call content goes when caching is on.
const (
	perCallAtEnd    = "end"    // a text block after the conversation marker
	perCallInSystem = "system" // the system prompt's last block, after its cachePoint
)

// perCallPlacement is the placement agent requests of Anthropic models use (a benchmark
// measures both); other models keep the per-call content in the system prompt (perCallFor).
var perCallPlacement = perCallAtEnd

// perCallFor is the per-call content's placement for a model id: perCallPlacement for an
// Anthropic Claude model, which takes text beside tool results in one user message (the end
// placement puts it there after a tool call); the system prompt for any other, since some
// Bedrock models refuse text beside a toolResult (research D.2.6; the fake's strictToolTurns).
func perCallFor(modelID string) string {
	id := strings.ToLower(modelID)
	if strings.Contains(id, "anthropic") || strings.Contains(id, "claude") {
		return perCallPlacement
	}
	return perCallInSystem
}

// promptCacheSetting resolves the prompt cache's switch and TTL (spec 02 §14.4), key by key:
// the host file's prompt.cache, then the workflow's settings.prompt_cache, then
// ARCHMAX_PROMPT_CACHE ("0" or "false": off) and ARCHMAX_PROMPT_CACHE_TTL ("1h"); on with
// the provider's default TTL (5 minutes, ttl "") when none says.
func promptCacheSetting(host, workflow *spec.PromptCache, getenv func(string) string) (bool, string) {
	enabled, ttl := true, ""
	if v := getenv("ARCHMAX_PROMPT_CACHE"); v == "0" || strings.EqualFold(v, "false") {
		enabled = false
	}
	if getenv("ARCHMAX_PROMPT_CACHE_TTL") == "1h" {
		ttl = "1h"
	}
	for _, pc := range []*spec.PromptCache{workflow, host} { // the later wins
		if pc == nil {
			continue
		}
		if pc.Enabled != nil {
			enabled = *pc.Enabled
		}
		switch pc.TTL {
		case "1h":
			ttl = "1h"
		case "5m":
			ttl = ""
		}
	}
	return enabled, ttl
}

// cacheEnabled is the run's prompt-cache switch and TTL.
func (r *run) cacheEnabled() (bool, string) {
	return promptCacheSetting(r.hostPromptCache(), r.sp.Settings.PromptCache, os.Getenv)
}

// cachedTools orders a state's tool specs for the cache: the tools every agent state of the
// workflow offers first, in name order, then the state's others in its surface's order; n is
// how many come first (0 when the state offers nothing the others all do).
func (r *run) cachedTools(st *spec.State) (tools []model.ToolSpec, n int) {
	specs := r.surfaceOf(st.Slug).specs
	common := map[string]bool{}
	for _, s := range specs {
		common[s.Name] = true
	}
	for _, other := range r.sp.States {
		if other.Slug == st.Slug || other.Type == "human" || machine.Automated(other.Type) {
			continue
		}
		names := r.surfaceOf(other.Slug).names
		for name := range common {
			if !slices.Contains(names, name) {
				delete(common, name)
			}
		}
	}
	tools = make([]model.ToolSpec, 0, len(specs))
	for _, s := range specs {
		if common[s.Name] {
			tools = append(tools, s)
		}
	}
	slices.SortFunc(tools, func(a, b model.ToolSpec) int { return strings.Compare(a.Name, b.Name) })
	n = len(tools)
	for _, s := range specs {
		if !common[s.Name] {
			tools = append(tools, s)
		}
	}
	return tools, n
}

// markConversation returns msgs with the moving conversation cachePoint at its end — and the
// previous step's marker (the end of the user message before the last assistant answer)
// when more than lookBackBlocks blocks follow it — and perCall, if any, as a text block after
// it (in a user message of its own when the conversation ends with the assistant's). Only
// the messages it changes are copied: msgs itself is never written. spare is how many
// cachePoints the rest of the request leaves; a marker that would pass it is left out.
func markConversation(msgs []model.Message, ttl, perCall string, spare int) []model.Message {
	if len(msgs) == 0 || spare <= 0 && perCall == "" {
		return msgs
	}
	out := make([]model.Message, len(msgs), len(msgs)+1)
	copy(out, msgs)
	cp := model.Block{Kind: model.BlockCachePoint, CacheTTL: ttl}
	withBlocks := func(i int, bs ...model.Block) {
		c := make([]model.Block, 0, len(out[i].Content)+len(bs))
		out[i].Content = append(append(c, out[i].Content...), bs...)
	}
	last := len(out) - 1
	if spare >= 2 {
		prev := -1
		for i := last; i > 0; i-- {
			if out[i].Role == model.RoleAssistant {
				prev = i - 1
				break
			}
		}
		if prev >= 0 {
			after := 0
			for _, m := range out[prev+1:] {
				after += len(m.Content)
			}
			if after > lookBackBlocks {
				withBlocks(prev, cp)
			}
		}
	}
	var tail []model.Block
	if spare >= 1 {
		tail = append(tail, cp)
	}
	switch {
	case perCall == "":
	case out[last].Role == model.RoleUser:
		tail = append(tail, model.Block{Kind: model.BlockText, Text: perCall})
	default:
		if len(tail) > 0 {
			withBlocks(last, tail...)
		}
		return append(out, model.Message{Role: model.RoleUser, Content: []model.Block{{Kind: model.BlockText, Text: perCall}}})
	}
	if len(tail) > 0 {
		withBlocks(last, tail...)
	}
	return out
}

// cachedRequest lays req out for the prompt cache (see the top of this file): req carries
// the state's tools and the conversation; cachedRequest sets its system blocks, orders and
// marks its tools and marks its conversation.
func (r *run) cachedRequest(st *spec.State, req *model.Request, ttl string) {
	used := 1 // the system prompt's
	if len(req.Tools) > 0 {
		req.Tools, req.ToolsCachePointAt = r.cachedTools(st)
		req.ToolsCachePoint, req.CacheTTL = true, ttl
		used++
	}
	req.System = []model.Block{{Kind: model.BlockText, Text: r.staticPrompt()}, {Kind: model.BlockCachePoint, CacheTTL: ttl}}
	perCall := r.callPrompt(st)
	if perCallFor(req.ModelID) == perCallInSystem || r.replyOnly {
		req.System = append(req.System, model.Block{Kind: model.BlockText, Text: perCall})
		perCall = ""
	}
	req.Messages = markConversation(req.Messages, ttl, perCall, model.MaxCachePoints-used)
}

// hostPromptCache is the host file's prompt.cache (nil: the host sets none).
func (r *run) hostPromptCache() *spec.PromptCache { return r.e.cfg.PromptCache }
