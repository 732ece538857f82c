package artifacts

import (
	"strings"

	"github.com/archmax-ai/archmax/core/transcript"
)

// TrajectoryDoc is trajectory.json (spec 02 §10): the transcript cut into segments, one
// per stretch of messages produced in the same state.
type TrajectoryDoc struct {
	SessionID   string    `json:"sessionId,omitempty"`
	Workflow    string    `json:"workflow"`
	Prompt      string    `json:"prompt,omitempty"` // the first person's (or opening) message
	FinalAnswer string    `json:"finalAnswer"`      // the last assistant text ("" when none)
	Segments    []Segment `json:"segments"`
}

// Segment is one stretch of the transcript in one state. EnteredState is the state the
// session was in before it (absent for the first segment), ExitedState the state it went
// to after it (absent for the last).
type Segment struct {
	State        string `json:"state"`
	EnteredState string `json:"enteredState,omitempty"`
	ExitedState  string `json:"exitedState,omitempty"`
	Items        []Item `json:"items"`
}

// Item is a message {kind: "message", role, content} or a tool call {kind: "tool_call",
// name, args, result} whose result is the tool message answering it (null until one does).
type Item struct {
	Kind    string
	Role    string
	Content string
	Name    string
	Args    map[string]any
	Result  *string
}

// MarshalJSON writes a tool call's result as a string or null, and a message without it.
func (it Item) MarshalJSON() ([]byte, error) {
	if it.Kind == "tool_call" {
		return encodeCompact(struct {
			Kind   string         `json:"kind"`
			Name   string         `json:"name"`
			Args   map[string]any `json:"args"`
			Result *string        `json:"result"`
		}{it.Kind, it.Name, it.Args, it.Result})
	}
	return encodeCompact(struct {
		Kind    string `json:"kind"`
		Role    string `json:"role"`
		Content string `json:"content"`
	}{it.Kind, it.Role, it.Content})
}

// TrajectoryOf derives the trajectory from the stored transcript: a new segment wherever
// the producing state changes (a message without a state stays in the current segment);
// person, assistant and runtime-note messages as message items (runtime notes under role
// "runtime"), each assistant tool call as a tool_call item answered by its tool message.
func TrajectoryOf(sessionID, workflow string, msgs []transcript.Message) *TrajectoryDoc {
	t := &TrajectoryDoc{SessionID: sessionID, Workflow: workflow, FinalAnswer: transcript.LastAgentText(msgs), Segments: []Segment{}}
	type at struct{ seg, item int }
	calls := map[string]at{}
	for _, m := range msgs {
		if t.Prompt == "" && m.Role == transcript.RoleUser {
			t.Prompt = strings.TrimSpace(m.Text)
		}
		if n := len(t.Segments); n == 0 || m.State != "" && m.State != t.Segments[n-1].State {
			t.Segments = append(t.Segments, Segment{State: m.State, Items: []Item{}})
		}
		seg := &t.Segments[len(t.Segments)-1]
		if seg.State == "" {
			seg.State = m.State
		}
		message := func(role, text string) {
			seg.Items = append(seg.Items, Item{Kind: "message", Role: role, Content: text})
		}
		switch {
		case m.Role == transcript.RoleTool:
			if c, ok := calls[m.ToolCallID]; ok && t.Segments[c.seg].Items[c.item].Result == nil {
				text := m.Text
				t.Segments[c.seg].Items[c.item].Result = &text
				continue
			}
			message(transcript.RoleTool, m.Text) // a result no call of the transcript made
		case m.Role == transcript.RoleAssistant:
			if strings.TrimSpace(m.Text) != "" || len(m.ToolCalls) == 0 {
				message(m.Role, m.Text)
			}
			for _, c := range m.ToolCalls {
				args := c.Args
				if args == nil {
					args = map[string]any{}
				}
				calls[c.ID] = at{len(t.Segments) - 1, len(seg.Items)}
				seg.Items = append(seg.Items, Item{Kind: "tool_call", Name: c.Name, Args: args})
			}
		case m.Note != "" && m.Role != transcript.RoleUser:
			message(transcript.RoleRuntime, m.Text)
		default:
			message(m.Role, m.Text)
		}
	}
	for i := range t.Segments {
		if i > 0 {
			t.Segments[i].EnteredState = t.Segments[i-1].State
		}
		if i+1 < len(t.Segments) {
			t.Segments[i].ExitedState = t.Segments[i+1].State
		}
	}
	return t
}
