package session

import (
	"testing"

	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/spec"
)

// lastText is the text of m's last text block (cachePoints and per-call content aside: the
// per-call block is the one after the conversation's cachePoint).
func lastText(m model.Message) string {
	for i := len(m.Content) - 1; i >= 0; i-- {
		b := m.Content[i]
		if b.Kind == model.BlockCachePoint {
			if i > 0 && m.Content[i-1].Kind == model.BlockText {
				return m.Content[i-1].Text
			}
			return ""
		}
	}
	for i := len(m.Content) - 1; i >= 0; i-- {
		if m.Content[i].Kind == model.BlockText {
			return m.Content[i].Text
		}
	}
	return ""
}

func TestPromptCacheSettingOrder(t *testing.T) {
	on, off := true, false
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	for _, c := range []struct {
		name           string
		host, workflow *spec.PromptCache
		env            map[string]string
		on             bool
		ttl            string
	}{
		{"default", nil, nil, nil, true, ""},
		{"env off", nil, nil, map[string]string{"ARCHMAX_PROMPT_CACHE": "false"}, false, ""},
		{"env 1h", nil, nil, map[string]string{"ARCHMAX_PROMPT_CACHE_TTL": "1h"}, true, "1h"},
		{"workflow over env", nil, &spec.PromptCache{Enabled: &on, TTL: "5m"}, map[string]string{"ARCHMAX_PROMPT_CACHE": "0", "ARCHMAX_PROMPT_CACHE_TTL": "1h"}, true, ""},
		{"host over workflow", &spec.PromptCache{Enabled: &off}, &spec.PromptCache{Enabled: &on, TTL: "1h"}, nil, false, "1h"},
		{"host ttl, workflow switch", &spec.PromptCache{TTL: "5m"}, &spec.PromptCache{Enabled: &off, TTL: "1h"}, nil, false, ""},
		{"host on over env off", &spec.PromptCache{Enabled: &on}, nil, map[string]string{"ARCHMAX_PROMPT_CACHE": "0"}, true, ""},
	} {
		gotOn, gotTTL := promptCacheSetting(c.host, c.workflow, env(c.env))
		if gotOn != c.on || gotTTL != c.ttl {
			t.Errorf("%s: (%t, %q), want (%t, %q)", c.name, gotOn, gotTTL, c.on, c.ttl)
		}
	}
}

func textBlock(s string) model.Block { return model.Block{Kind: model.BlockText, Text: s} }

func countCachePoints(r *model.Request) int {
	n := 0
	if r.ToolsCachePoint {
		n++
	}
	for _, b := range r.System {
		if b.Kind == model.BlockCachePoint {
			n++
		}
	}
	for _, m := range r.Messages {
		for _, b := range m.Content {
			if b.Kind == model.BlockCachePoint {
				n++
			}
		}
	}
	return n
}

func TestMarkConversation(t *testing.T) {
	use := func(id string) model.Block {
		return model.Block{Kind: model.BlockToolUse, ToolUse: &model.ToolUse{ID: id, Name: "read_file", Input: []byte(`{}`)}}
	}
	result := func(id string) model.Block {
		return model.Block{Kind: model.BlockToolResult, ToolResult: &model.ToolResult{ToolUseID: id, Content: "ok", Status: "success"}}
	}
	msgs := []model.Message{
		{Role: model.RoleUser, Content: []model.Block{textBlock("hi")}},
		{Role: model.RoleAssistant, Content: []model.Block{use("a")}},
		{Role: model.RoleUser, Content: []model.Block{result("a")}},
	}
	out := markConversation(msgs, "", "per call", 2)
	last := out[2].Content
	if len(last) != 3 || last[1].Kind != model.BlockCachePoint || last[2].Text != "per call" {
		t.Fatalf("last message %+v", last)
	}
	if len(msgs[2].Content) != 1 {
		t.Fatal("the rendered conversation was written")
	}
	if n := countCachePoints(&model.Request{Messages: out}); n != 1 {
		t.Errorf("%d markers for a 2-block step, want 1", n)
	}
	// a step of 12 parallel calls adds 24 blocks: the previous marker is kept
	var uses, results []model.Block
	for i := range 12 {
		id := string(rune('b' + i))
		uses, results = append(uses, use(id)), append(results, result(id))
	}
	long := append(append([]model.Message(nil), msgs...), model.Message{Role: model.RoleAssistant, Content: uses}, model.Message{Role: model.RoleUser, Content: results})
	out = markConversation(long, "1h", "", 2)
	if k := out[2].Content; len(k) != 2 || k[1].Kind != model.BlockCachePoint || k[1].CacheTTL != "1h" {
		t.Errorf("previous marker %+v", k)
	}
	if k := out[4].Content; k[len(k)-1].Kind != model.BlockCachePoint {
		t.Errorf("no marker at the end: %+v", k)
	}
	if n := countCachePoints(&model.Request{Messages: out}); n != 2 {
		t.Errorf("%d markers", n)
	}
	// with one spare, only the moving marker
	if n := countCachePoints(&model.Request{Messages: markConversation(long, "", "", 1)}); n != 1 {
		t.Errorf("%d markers with one spare", n)
	}
	// a conversation ending with the assistant's message gets the per-call content in a
	// user message of its own
	out = markConversation(msgs[:2], "", "per call", 2)
	if len(out) != 3 || out[2].Role != model.RoleUser || out[2].Content[0].Text != "per call" {
		t.Errorf("out %+v", out)
	}
	if err := model.ValidateRequest(&model.Request{ModelID: "m", Messages: markConversation(long, "", "per call", 2),
		Tools: []model.ToolSpec{{Name: "read_file", InputSchema: []byte(`{"type":"object"}`)}}}); err != nil {
		t.Error(err)
	}
}

// perCallOf is the per-call content of an agent request wherever it travels: the request's
// final block after the conversation's cachePoint (perCallAtEnd), else the system prompt's
// last block.
func perCallOf(req *model.Request) string {
	if n := len(req.Messages); n > 0 {
		c := req.Messages[n-1].Content
		if k := len(c); k >= 2 && c[k-1].Kind == model.BlockText && c[k-2].Kind == model.BlockCachePoint {
			return c[k-1].Text
		}
		if k := len(c); k == 1 && n >= 2 && c[0].Kind == model.BlockText {
			if p := req.Messages[n-2].Content; len(p) > 0 && p[len(p)-1].Kind == model.BlockCachePoint {
				return c[0].Text
			}
		}
	}
	return req.System[len(req.System)-1].Text
}

// The host file's prompt.cache reaches the requests: off, no cachePoint at all and the
// per-call content in the system prompt; on (the default), the tools, the system prompt and
// the conversation are marked and the per-call content ends the request.
func TestHostPromptCacheSwitch(t *testing.T) {
	off := false
	h := newHarness(t, twoAgents, nil)
	h.cfg.PromptCache = &spec.PromptCache{Enabled: &off}
	h.script(says("ok"))
	if _, err := h.engine().Send(t.Context(), "pc-off", SendInput{Message: "hi", Variables: map[string]any{"topic": "x"}}); err != nil {
		t.Fatal(err)
	}
	req := h.model.requests[0]
	if n := countCachePoints(req); n != 0 || len(req.System) != 2 {
		t.Errorf("caching off: %d cachePoints, %d system blocks", n, len(req.System))
	}
	h2 := newHarness(t, twoAgents, nil)
	h2.cfg.ModelID = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
	h2.script(says("ok"))
	if _, err := h2.engine().Send(t.Context(), "pc-on", SendInput{Message: "hi", Variables: map[string]any{"topic": "x"}}); err != nil {
		t.Fatal(err)
	}
	req = h2.model.requests[0]
	last := req.Messages[len(req.Messages)-1].Content
	if n := countCachePoints(req); n != 3 || !req.ToolsCachePoint || len(req.System) != 2 || last[len(last)-2].Kind != model.BlockCachePoint {
		t.Errorf("caching on: %d cachePoints, system %d blocks, last message %+v", n, len(req.System), last)
	}
	if err := model.ValidateRequest(req); err != nil {
		t.Error(err)
	}
}

func TestPerCallPlacementByModel(t *testing.T) {
	for id, want := range map[string]string{
		"us.anthropic.claude-sonnet-4-5-20250929-v1:0": perCallAtEnd, "claude-test": perCallAtEnd,
		"amazon.nova-pro-v1:0": perCallInSystem, "meta.llama3-70b-instruct-v1:0": perCallInSystem, "test-model": perCallInSystem,
	} {
		if got := perCallFor(id); got != want {
			t.Errorf("%s: %s, want %s", id, got, want)
		}
	}
}
