package transcript

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/archmax-ai/archmax/core/model"
)

// LastAgentText is the trimmed text of the last assistant message with non-blank text
// (runtime notes and tool results skipped); "" when there is none (spec 02 §5.4).
func LastAgentText(msgs []Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == RoleAssistant {
			if t := strings.TrimSpace(msgs[i].Text); t != "" {
				return t
			}
		}
	}
	return ""
}

// IsRuntimeNote reports whether m is a runtime note (the opening note included).
func IsRuntimeNote(m Message) bool { return m.Note != "" }

// ToModel renders stored messages as a Converse conversation; see Conversation.
func ToModel(msgs []Message) []model.Message {
	var c Conversation
	for _, m := range msgs {
		c.Add(m)
	}
	return c.Messages()
}

// Conversation renders a transcript as Converse messages incrementally (DESIGN.md §6):
// person messages and runtime notes become user text, assistant messages carry their text
// and toolUse blocks, tool messages become toolResult blocks of a user message; consecutive
// messages of one role merge into one message, and where a user message carries tool
// results, the results come first. Blank text is dropped, so every block is non-empty.
// Adding a message costs O(1) amortised, so a step's rendering does not grow with the session.
type Conversation struct {
	out []model.Message
}

// Messages returns the rendered conversation (valid until the next Add).
func (c *Conversation) Messages() []model.Message { return c.out }

// Add renders one stored message onto the conversation.
func (c *Conversation) Add(m Message) {
	switch m.Role {
	case RoleAssistant:
		var blocks []model.Block
		if strings.TrimSpace(m.Text) != "" {
			blocks = append(blocks, model.Block{Kind: model.BlockText, Text: m.Text})
		}
		for _, tc := range m.ToolCalls {
			args := tc.Args
			if args == nil {
				args = map[string]any{}
			}
			raw, _ := json.Marshal(args)
			blocks = append(blocks, model.Block{Kind: model.BlockToolUse, ToolUse: &model.ToolUse{ID: tc.ID, Name: tc.Name, Input: raw}})
		}
		c.append(model.RoleAssistant, blocks)
	case RoleTool:
		status, text := "success", m.Text
		if m.Error || m.Blocked {
			status = "error"
		}
		if strings.TrimSpace(text) == "" {
			text = "(no output)"
		}
		c.append(model.RoleUser, []model.Block{{Kind: model.BlockToolResult, ToolResult: &model.ToolResult{ToolUseID: m.ToolCallID, Content: text, Status: status}}})
	default: // person messages and runtime notes
		if strings.TrimSpace(m.Text) != "" {
			c.append(model.RoleUser, []model.Block{{Kind: model.BlockText, Text: m.Text}})
		}
	}
}

func (c *Conversation) append(role model.Role, blocks []model.Block) {
	if len(blocks) == 0 {
		return
	}
	n := len(c.out)
	if n == 0 || c.out[n-1].Role != role {
		c.out = append(c.out, model.Message{Role: role, Content: blocks})
		return
	}
	last := &c.out[n-1]
	if role == model.RoleUser && blocks[0].Kind == model.BlockToolResult {
		// keep every toolResult ahead of user text in the merged message
		i := 0
		for i < len(last.Content) && last.Content[i].Kind == model.BlockToolResult {
			i++
		}
		if i < len(last.Content) {
			merged := make([]model.Block, 0, len(last.Content)+len(blocks))
			merged = append(merged, last.Content[:i]...)
			merged = append(merged, blocks...)
			last.Content = append(merged, last.Content[i:]...)
			return
		}
	}
	last.Content = append(last.Content, blocks...)
}

// HistoryMessage is one entry of archmax_get_history (03 HI-03).
type HistoryMessage struct {
	Role      string        `json:"role"`
	Text      string        `json:"text"`
	ToolCalls []HistoryCall `json:"toolCalls,omitempty"`
	Tool      string        `json:"tool,omitempty"`
	ID        string        `json:"id,omitempty"`
	Note      NoteKind      `json:"note,omitempty"`
}

// HistoryCall is one call of an assistant history entry.
type HistoryCall struct {
	ID   string         `json:"id,omitempty"`
	Name string         `json:"name"`
	Args map[string]any `json:"args"`
}

// History renders the session as archmax_get_history returns it: JSON text of
// {messages, trail}, oldest first (03 HI-01…HI-06).
func History(msgs []Message, trail []TrailStep) ([]byte, error) {
	hm := make([]HistoryMessage, 0, len(msgs))
	for _, m := range msgs {
		h := HistoryMessage{Role: m.Role, Text: m.Text}
		switch {
		case m.Note != "":
			h.Role, h.Note = RoleRuntime, m.Note
		case m.Role == RoleAssistant:
			for _, c := range m.ToolCalls {
				args := c.Args
				if args == nil {
					args = map[string]any{}
				}
				h.ToolCalls = append(h.ToolCalls, HistoryCall{ID: c.ID, Name: c.Name, Args: args})
			}
		case m.Role == RoleTool:
			h.Tool, h.ID = m.Tool, m.ToolCallID
		}
		hm = append(hm, h)
	}
	if trail == nil {
		trail = []TrailStep{}
	}
	if slices.ContainsFunc(trail, func(s TrailStep) bool { return s.By != nil }) {
		// who called is audit data, not part of the history contract (03 HI-05)
		trail = slices.Clone(trail)
		for i := range trail {
			trail[i].By = nil
		}
	}
	return json.Marshal(struct {
		Messages []HistoryMessage `json:"messages"`
		Trail    []TrailStep      `json:"trail"`
	}{hm, trail})
}
