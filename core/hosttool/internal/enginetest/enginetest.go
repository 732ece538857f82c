// Package enginetest runs host tools through the real engine (core/session) for the kinds'
// tests: memory stores, a workflow written in YAML and a model answering from a script.
package enginetest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/store/memory"
	"github.com/archmax-ai/archmax/core/transcript"
)

// Reply is one scripted model answer.
type Reply func(req *model.Request) (*model.Response, error)

// Call is one tool call of a scripted answer.
type Call struct {
	Name string
	Args map[string]any
}

var seq atomic.Int64

// Says answers with text and no tool call.
func Says(text string) Reply {
	return func(*model.Request) (*model.Response, error) {
		return &model.Response{StopReason: model.StopEndTurn, Usage: &model.Usage{InputTokens: 10, OutputTokens: 5},
			Message: model.Message{Role: model.RoleAssistant, Content: []model.Block{{Kind: model.BlockText, Text: text}}}}, nil
	}
}

// Calls answers with tool calls.
func Calls(cs ...Call) Reply {
	return func(*model.Request) (*model.Response, error) {
		var blocks []model.Block
		for _, c := range cs {
			raw, _ := json.Marshal(c.Args)
			blocks = append(blocks, model.Block{Kind: model.BlockToolUse, ToolUse: &model.ToolUse{ID: fmt.Sprintf("tooluse_%d", seq.Add(1)), Name: c.Name, Input: raw}})
		}
		return &model.Response{StopReason: model.StopToolUse, Usage: &model.Usage{InputTokens: 10, OutputTokens: 5},
			Message: model.Message{Role: model.RoleAssistant, Content: blocks}}, nil
	}
}

// Model answers from a queue and checks every request against Bedrock's rules.
type Model struct {
	t        *testing.T
	mu       sync.Mutex
	replies  []Reply
	Requests []*model.Request
}

func (m *Model) Converse(_ context.Context, req *model.Request) (*model.Response, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := model.ValidateRequest(req); err != nil {
		m.t.Errorf("the engine built a request Bedrock would refuse: %v", err)
		return nil, err
	}
	m.Requests = append(m.Requests, req)
	if len(m.replies) == 0 {
		m.t.Errorf("unexpected model call %d", len(m.Requests))
		return nil, fmt.Errorf("no scripted reply left")
	}
	r := m.replies[0]
	m.replies = m.replies[1:]
	return r(req)
}

// Harness is an engine over memory stores.
type Harness struct {
	t     *testing.T
	Model *Model
	Files *memory.Files
	Cfg   session.Config
}

// New is a harness running workflowYAML (workflow "wf") with the host tools.
func New(t *testing.T, workflowYAML string, tools []session.HostTool) *Harness {
	t.Helper()
	authored := memory.NewFiles()
	if err := authored.Write(context.Background(), "workflows/wf/workflow.yaml", []byte(workflowYAML)); err != nil {
		t.Fatal(err)
	}
	h := &Harness{t: t, Model: &Model{t: t}, Files: memory.NewFiles()}
	h.Cfg = session.Config{Workflow: "wf", Authored: authored, Log: memory.New(), Files: h.Files, Model: h.Model,
		ModelID: "test-model", Tools: tools}
	return h
}

// Script queues model answers.
func (h *Harness) Script(rs ...Reply) {
	h.Model.mu.Lock()
	defer h.Model.mu.Unlock()
	h.Model.replies = append(h.Model.replies, rs...)
}

// Send sends a message to session id and checks every scripted answer was used.
func (h *Harness) Send(id, msg string) *session.Outcome {
	h.t.Helper()
	e, err := session.New(h.Cfg)
	if err != nil {
		h.t.Fatalf("session.New: %v", err)
	}
	out, err := e.Send(context.Background(), id, session.SendInput{Message: msg})
	if err != nil {
		h.t.Fatalf("Send: %v", err)
	}
	h.Model.mu.Lock()
	defer h.Model.mu.Unlock()
	if len(h.Model.replies) > 0 {
		h.t.Errorf("%d scripted model answers were not used", len(h.Model.replies))
	}
	return out
}

// ToolResults are the tool messages answering calls of tool, in order.
func ToolResults(out *session.Outcome, tool string) []transcript.Message {
	var ms []transcript.Message
	for _, m := range out.Messages {
		if m.Role == transcript.RoleTool && m.Tool == tool {
			ms = append(ms, m)
		}
	}
	return ms
}
