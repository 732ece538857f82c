package hostconfig

import (
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/yamltree"
)

// Prompt is the `prompt:` section: how the host's engines build model requests.
//
//	prompt:
//	  cache: { enabled: true, ttl: 5m }   # or 1h; enabled: false removes every cachePoint
//
// Each key of `cache` wins over the workflow's settings.prompt_cache and over
// ARCHMAX_PROMPT_CACHE / ARCHMAX_PROMPT_CACHE_TTL (spec 02 §14.4: host, then workflow, then
// environment); a key the section leaves out is decided by the next of them.
type Prompt struct {
	// Cache is prompt.cache; nil when the section names none.
	Cache *spec.PromptCache
	// Line and Column locate the section in the file (for findings).
	Line, Column int
}

// Keys of the section.
var (
	promptKeys      = []string{"cache"}
	promptCacheKeys = []string{"enabled", "ttl"}
)

// prompt reads `prompt:`.
func (p *parser) prompt(n *node, field string) *Prompt {
	out := &Prompt{Line: n.Line, Column: n.Col}
	if n.Kind != yamltree.Map {
		p.at(CodeType, field, n, "'%s' must be a mapping { cache: { enabled, ttl } }", field)
		return out
	}
	p.strict(n, field, promptKeys, func(e *yamltree.Entry, f string) {
		if e.Val.Kind != yamltree.Map {
			p.at(CodeType, f, e.Val, "'%s' must be a mapping { enabled: true|false, ttl: 5m|1h }", f)
			return
		}
		pc := &spec.PromptCache{}
		p.strict(e.Val, f, promptCacheKeys, func(e *yamltree.Entry, f string) {
			switch e.Key {
			case "enabled":
				if e.Val.Kind != yamltree.Bool {
					p.at(CodeType, f, e.Val, "'%s' must be true or false", f)
					return
				}
				on := e.Val.Truth
				pc.Enabled = &on
			case "ttl":
				if e.Val.Kind != yamltree.String || (e.Val.Str != "5m" && e.Val.Str != "1h") {
					p.at(CodeType, f, e.Val, "'%s' must be 5m or 1h", f)
					return
				}
				pc.TTL = e.Val.Str
			}
		})
		out.Cache = pc
	})
	return out
}
