package session

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/events"
	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/store/memory"
	"github.com/archmax-ai/archmax/core/transcript"
)

// reply builds one scripted model answer from a request.
type reply func(req *model.Request) (*model.Response, error)

// queueModel answers model calls from a queue and checks every request against Bedrock's
// rules (model.ValidateRequest), so the engine is proven never to build a bad history.
type queueModel struct {
	t        *testing.T
	mu       sync.Mutex
	replies  []reply
	requests []*model.Request
	// bySession answers a session's calls from its own queue (concurrent sub-workflow
	// children), ahead of replies.
	bySession map[string][]reply
	// hook, when set, runs outside the lock before a reply (to observe concurrency).
	hook func(req *model.Request)
}

func (q *queueModel) Converse(ctx context.Context, req *model.Request) (*model.Response, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := model.ValidateRequest(req); err != nil {
		q.t.Errorf("engine built a request Bedrock would refuse: %v", err)
		return nil, err
	}
	q.requests = append(q.requests, req)
	if sid := strings.ReplaceAll(req.Metadata["archmax.session"], "/", "~"); len(q.bySession[sid]) > 0 {
		sq := q.bySession[sid]
		q.bySession[sid] = sq[1:]
		hook := q.hook
		q.mu.Unlock()
		if hook != nil {
			hook(req)
		}
		res, err := sq[0](req)
		q.mu.Lock()
		return res, err
	}
	if len(q.replies) == 0 {
		q.t.Errorf("unexpected model call %d in state %s", len(q.requests), req.Metadata["archmax.state"])
		return nil, fmt.Errorf("no scripted reply left")
	}
	r := q.replies[0]
	q.replies = q.replies[1:]
	return r(req)
}

// says answers with text and no tool calls (ends the turn).
func says(text string) reply {
	return func(*model.Request) (*model.Response, error) {
		return &model.Response{StopReason: model.StopEndTurn, Usage: &model.Usage{InputTokens: 100, OutputTokens: 10},
			Message: model.Message{Role: model.RoleAssistant, Content: []model.Block{{Kind: model.BlockText, Text: text}}}}, nil
	}
}

type call struct {
	name string
	args map[string]any
}

var callSeq atomic.Int64

// calls answers with tool calls (and optional text first).
func calls(text string, cs ...call) reply {
	return func(*model.Request) (*model.Response, error) {
		var blocks []model.Block
		if text != "" {
			blocks = append(blocks, model.Block{Kind: model.BlockText, Text: text})
		}
		for _, c := range cs {
			raw, _ := json.Marshal(c.args)
			blocks = append(blocks, model.Block{Kind: model.BlockToolUse, ToolUse: &model.ToolUse{ID: fmt.Sprintf("tu_%d", callSeq.Add(1)), Name: c.name, Input: raw}})
		}
		return &model.Response{StopReason: model.StopToolUse, Usage: &model.Usage{InputTokens: 200, OutputTokens: 20, CacheReadTokens: 50},
			Message: model.Message{Role: model.RoleAssistant, Content: blocks}}, nil
	}
}

func advance(to, reason string) call {
	return call{"archmax_advance", map[string]any{"to": to, "reason": reason}}
}

// harness is an engine over memory stores with a workflow written in YAML.
type harness struct {
	t        *testing.T
	authored *memory.Files
	log      *memory.Store
	files    *memory.Files
	model    *queueModel
	mu       sync.Mutex
	events   []events.Event
	cfg      Config
}

func newHarness(t *testing.T, workflowYAML string, files map[string]string) *harness {
	t.Helper()
	h := &harness{t: t, authored: memory.NewFiles(), log: memory.New(), files: memory.NewFiles(), model: &queueModel{t: t}}
	ctx := context.Background()
	must(t, h.authored.Write(ctx, "workflows/wf/workflow.yaml", []byte(workflowYAML)))
	for k, v := range files {
		must(t, h.authored.Write(ctx, k, []byte(v)))
	}
	h.cfg = Config{Workflow: "wf", Authored: h.authored, Log: h.log, Files: h.files, Model: h.model, ModelID: "test-model",
		Events: func(e events.Event) { h.mu.Lock(); h.events = append(h.events, e); h.mu.Unlock() }}
	return h
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (h *harness) engine() *Engine {
	e, err := New(h.cfg)
	must(h.t, err)
	return e
}

func (h *harness) script(replies ...reply) { h.model.replies = append(h.model.replies, replies...) }

func (h *harness) send(id, msg string, vars map[string]any) *Outcome {
	h.t.Helper()
	out, err := h.engine().Send(context.Background(), id, SendInput{Message: msg, Variables: vars})
	if err != nil {
		h.t.Fatalf("Send: %v", err)
	}
	if len(h.model.replies) > 0 {
		h.t.Errorf("%d scripted model replies were not used", len(h.model.replies))
	}
	return out
}

// trailOf renders the trail as "kind:to" items.
func trailOf(o *Outcome) string {
	var parts []string
	for _, s := range o.AuditTrail {
		parts = append(parts, string(s.Kind)+":"+s.To)
	}
	return strings.Join(parts, " ")
}

// notes returns the runtime notes of the transcript.
func notes(o *Outcome) []transcript.Message {
	var out []transcript.Message
	for _, m := range o.Messages {
		if m.Note != "" {
			out = append(out, m)
		}
	}
	return out
}

// toolMessage finds the tool result answering the n-th call of tool (0-based).
func toolMessage(t *testing.T, o *Outcome, tool string, n int) transcript.Message {
	t.Helper()
	for _, m := range o.Messages {
		if m.Role == transcript.RoleTool && m.Tool == tool {
			if n == 0 {
				return m
			}
			n--
		}
	}
	t.Fatalf("no tool message for %s", tool)
	return transcript.Message{}
}

func (h *harness) eventsOf(typ string) []events.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []events.Event
	for _, e := range h.events {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

var _ = time.Second
