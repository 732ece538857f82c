package model

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func text(s string) Block { return Block{Kind: BlockText, Text: s} }
func cache() Block        { return Block{Kind: BlockCachePoint} }
func use(id, name string) Block {
	return Block{Kind: BlockToolUse, ToolUse: &ToolUse{ID: id, Name: name, Input: json.RawMessage(`{"a":1}`)}}
}
func result(id, content, status string) Block {
	return Block{Kind: BlockToolResult, ToolResult: &ToolResult{ToolUseID: id, Content: content, Status: status}}
}
func user(b ...Block) Message      { return Message{Role: RoleUser, Content: b} }
func assistant(b ...Block) Message { return Message{Role: RoleAssistant, Content: b} }

var readTool = ToolSpec{Name: "read_file", Description: "Reads a file.", InputSchema: json.RawMessage(`{"type":"object"}`)}

// validRequest is a well-formed tool round trip with system, tool and message cache points.
func validRequest() *Request {
	return &Request{
		ModelID: "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
		System:  []Block{text("You are helpful."), cache()},
		Messages: []Message{
			user(text("hi")),
			assistant(text("reading"), use("tu-1", "read_file"), use("tu_2", "read_file")),
			user(result("tu-1", "contents", "success"), result("tu_2", "boom", "error"), cache()),
		},
		Tools:           []ToolSpec{readTool},
		ToolsCachePoint: true,
		CacheTTL:        "1h",
		Metadata:        map[string]string{"archmax.session": "s1_1", "archmax.turn": "3"},
	}
}

func TestValidateRequestAcceptsWellFormed(t *testing.T) {
	if err := ValidateRequest(validRequest()); err != nil {
		t.Fatalf("ValidateRequest(valid) = %v", err)
	}
}

// TestValidateRequestRefuses covers D.2.1–D.2.5, D.2.7, D.2.8, D.3, D.4, D.5 and D.8.
func TestValidateRequestRefuses(t *testing.T) {
	tests := []struct {
		name     string
		mutate   func(r *Request)
		path     string
		contains string
	}{
		{"D.2.1 first message not user", func(r *Request) {
			r.Messages = []Message{assistant(text("x")), user(text("y"))}
		}, "messages.0", "must start with a user message"},
		{"D.2.2 not alternating", func(r *Request) {
			r.Messages = []Message{user(text("x")), user(text("y"))}
		}, "messages.1", "must alternate between user and assistant"},
		{"D.2.3 empty content", func(r *Request) {
			r.Messages = []Message{user(text("x")), assistant()}
		}, "messages.1.content", "The content field in the Message object at messages.1 is empty."},
		{"D.2.4 blank text", func(r *Request) {
			r.Messages = []Message{user(text("x"), text(" \n\t"))}
		}, "messages.0.content.1", "The text field in the ContentBlock object at messages.0.content.1 is blank."},
		{"D.2.5 orphan toolResult", func(r *Request) {
			r.Messages[2].Content = append(r.Messages[2].Content, result("tu-9", "x", "success"))
		}, "messages.2.content.3", "matches no toolUse"},
		{"D.2.5 toolResult in first message", func(r *Request) {
			r.Messages = []Message{user(result("tu-1", "x", "success"))}
		}, "messages.0.content.0", "matches no toolUse"},
		{"D.2.5 missing toolResult", func(r *Request) {
			r.Messages[2].Content = r.Messages[2].Content[:1]
		}, "messages.2.content", "Expected toolResult blocks at messages.2.content for the following Ids: tu_2"},
		{"D.2.5 dangling toolUse at the end", func(r *Request) {
			r.Messages = r.Messages[:2]
		}, "messages.1.content", "must be followed by a user message"},
		{"D.2.5 extra toolResult", func(r *Request) {
			r.Messages[2].Content = append(r.Messages[2].Content, result("tu-1", "again", "success"))
		}, "messages.2.content", "exceeds the number of toolUse blocks"},
		{"D.2.7 toolUse without toolConfig", func(r *Request) {
			r.Tools, r.ToolsCachePoint = nil, false
		}, "toolConfig", "The toolConfig field must be defined when using toolUse and toolResult content blocks."},
		{"D.2.8 error result with empty content", func(r *Request) {
			r.Messages[2].Content[1].ToolResult.Content = ""
		}, "messages.2.content.1.toolResult", "cannot be empty when status value is error"},
		{"D.3 bad toolUse id", func(r *Request) {
			r.Messages[1].Content[1].ToolUse.ID = "tu.1"
			r.Messages[2].Content[0].ToolResult.ToolUseID = "tu.1"
		}, "messages.1.content.1.toolUse.toolUseId", "regular expression pattern"},
		{"D.3 toolUse input not an object", func(r *Request) {
			r.Messages[1].Content[1].ToolUse.Input = json.RawMessage(`[1]`)
		}, "messages.1.content.1.toolUse.input", "JSON object"},
		{"D.3 toolUse in a user message", func(r *Request) {
			r.Messages = []Message{user(use("tu-1", "read_file"))}
		}, "messages.0.content.0.toolUse", "only allowed in an assistant message"},
		{"D.4 bad tool name in history", func(r *Request) {
			r.Messages[1].Content[1].ToolUse.Name = "read file"
		}, "messages.1.content.1.toolUse.name", "[a-zA-Z0-9_-]+"},
		{"D.4 tool name too long", func(r *Request) {
			r.Tools[0].Name = strings.Repeat("x", 65)
		}, "toolConfig.tools.0.toolSpec.name", "length between 1 and 64"},
		{"D.4 duplicate tool names", func(r *Request) {
			r.Tools = append(r.Tools, readTool)
		}, "toolConfig.tools.1.toolSpec.name", "must be unique"},
		{"D.4 schema not an object", func(r *Request) {
			r.Tools[0].InputSchema = json.RawMessage(`{"type":"string"}`)
		}, "toolConfig.tools.0.toolSpec.inputSchema.json", "top level schema type must be object"},
		{"D.1 empty system text", func(r *Request) {
			r.System[0].Text = ""
		}, "system.0.text", "length greater than or equal to 1"},
		{"D.5 five cache points", func(r *Request) {
			r.Messages[0].Content = append(r.Messages[0].Content, cache(), cache())
		}, "toolConfig.tools.1", "at most 4 cachePoint blocks"},
		{"D.5 bad cache ttl", func(r *Request) {
			r.System[1].CacheTTL = "2h"
		}, "system.1.cachePoint.ttl", "enum value set: [5m, 1h]"},
		{"D.8 bad metadata value", func(r *Request) {
			r.Metadata["archmax.session"] = "s1~1"
		}, "requestMetadata.archmax.session", "1-256 characters"},
		{"D.8 empty metadata value", func(r *Request) {
			r.Metadata["archmax.state"] = ""
		}, "requestMetadata.archmax.state", "1-256 characters"},
		{"tools cachePoint without tools", func(r *Request) {
			r.Messages = r.Messages[:1]
			r.Tools = nil
		}, "toolConfig.tools", "at least one toolSpec"},
		{"missing model id", func(r *Request) { r.ModelID = "" }, "modelId", "length between 1 and 2048"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := validRequest()
			tt.mutate(r)
			err := ValidateRequest(r)
			var ire *InvalidRequestError
			if !errors.As(err, &ire) {
				t.Fatalf("ValidateRequest = %v, want *InvalidRequestError", err)
			}
			if ire.Path != tt.path || !strings.Contains(ire.Message, tt.contains) {
				t.Errorf("got path %q message %q; want path %q message containing %q", ire.Path, ire.Message, tt.path, tt.contains)
			}
		})
	}
}

// TestValidateRequestWireOrder checks that with several defects the first in wire order wins.
func TestValidateRequestWireOrder(t *testing.T) {
	r := validRequest()
	r.Messages[0].Content[0].Text = ""                     // messages.0.content.0 blank
	r.Messages[1].Content[1].ToolUse.Name = "bad name"     // later message
	r.Tools[0].InputSchema = json.RawMessage(`{"type":1}`) // tools come after messages
	r.Metadata["bad"] = "~"                                // metadata comes last
	var ire *InvalidRequestError
	if err := ValidateRequest(r); !errors.As(err, &ire) || ire.Path != "messages.0.content.0" {
		t.Fatalf("ValidateRequest = %v, want the blank text at messages.0.content.0", err)
	}
}

func TestSanitizeMetadataValue(t *testing.T) {
	tests := []struct{ in, want string }{
		{"s1~1", "s1_1"},
		{"", "_"},
		{"intake state: a@b $x #1 =/+,-.", "intake state: a@b $x #1 =/+,-."},
		{"café/ünï", "caf_/_n_"},
		{strings.Repeat("a", 300), strings.Repeat("a", 256)},
		{strings.Repeat("é", 300), strings.Repeat("_", 256)},
	}
	for _, tt := range tests {
		got := SanitizeMetadataValue(tt.in)
		if got != tt.want {
			t.Errorf("SanitizeMetadataValue(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if err := ValidateRequest(&Request{ModelID: "m", Messages: []Message{user(text("x"))}, Metadata: map[string]string{got: got}}); err != nil {
			t.Errorf("sanitised %q is still refused: %v", got, err)
		}
	}
}
