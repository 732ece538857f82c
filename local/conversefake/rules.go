package conversefake

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"
)

// checkRequest applies Bedrock's request rules (research/bedrock-converse.md) to a decoded
// wire body and returns the first violation as Bedrock words it, with the indexed path:
// system text (D.1); per message in order the first-user (D.2.1), alternation (D.2.2),
// non-empty content (D.2.3), one member per block and non-blank text (D.2.4, D.3), toolUse
// and toolResult ids and names (D.3, D.4), toolConfig presence (D.2.7), non-empty error
// results (D.2.8), with strict, no text beside a toolResult (D.2.6), and toolUse/toolResult
// pairing with the neighbouring message (D.2.5); then the tool specs (D.4), the cachePoint
// count (D.5) and requestMetadata (D.8).
func checkRequest(req *wireRequest, strict bool) error {
	c := checker{toolConfig: req.ToolConfig != nil, strict: strict}
	for i, b := range req.System {
		path := fmt.Sprintf("system.%d", i)
		switch {
		case len(b.members) != 1:
			return fmt.Errorf("%s: a SystemContentBlock must set exactly one member, got %v", path, b.members)
		case b.Text != nil && *b.Text == "":
			return fmt.Errorf("Value at '%s.text' failed to satisfy constraint: Member must have length greater than or equal to 1", path)
		case b.CachePoint != nil:
			if err := c.cachePoint(path, b.CachePoint); err != nil {
				return err
			}
		case b.Text == nil:
			return fmt.Errorf("%s: unsupported system block member %s", path, b.members[0])
		}
	}
	for i := range req.Messages {
		if err := c.message(req.Messages, i); err != nil {
			return err
		}
	}
	if err := c.tools(req.ToolConfig); err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(req.RequestMetadata)) {
		if !metadataOK(k) || !metadataOK(req.RequestMetadata[k]) {
			return fmt.Errorf("1 validation error detected: Value at 'requestMetadata' failed to satisfy constraint: Map key %q and value %q must be 1-256 characters of [a-zA-Z0-9\\s:_@$#=/+,-.]", k, req.RequestMetadata[k])
		}
	}
	return nil
}

type checker struct {
	toolConfig  bool
	strict      bool
	cachePoints int
}

func (c *checker) cachePoint(path string, cp *wireCachePoint) error {
	if cp.Type != "default" {
		return fmt.Errorf("Value '%s' at '%s.cachePoint.type' failed to satisfy constraint: Member must satisfy enum value set: [default]", cp.Type, path)
	}
	if cp.TTL != "" && cp.TTL != "5m" && cp.TTL != "1h" {
		return fmt.Errorf("Value '%s' at '%s.cachePoint.ttl' failed to satisfy constraint: Member must satisfy enum value set: [5m, 1h]", cp.TTL, path)
	}
	if c.cachePoints++; c.cachePoints > 4 {
		return fmt.Errorf("%s: a request may contain at most 4 cachePoint blocks; this is number %d", path, c.cachePoints)
	}
	return nil
}

func (c *checker) message(msgs []wireMessage, i int) error {
	m := msgs[i]
	path := fmt.Sprintf("messages.%d", i)
	switch {
	case m.Role != "user" && m.Role != "assistant":
		return fmt.Errorf("Value '%s' at '%s.role' failed to satisfy constraint: Member must satisfy enum value set: [user, assistant]", m.Role, path)
	case i == 0 && m.Role != "user":
		return errors.New("A conversation must start with a user message. Try again with a conversation that starts with a user message.")
	case i > 0 && m.Role == msgs[i-1].Role:
		return errors.New("A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again.")
	case len(m.Content) == 0:
		return fmt.Errorf("The content field in the Message object at %s is empty. Add a ContentBlock object to the content field and try again.", path)
	}
	hasText, hasResult := false, false
	for j := range m.Content {
		b := &m.Content[j]
		bpath := fmt.Sprintf("%s.content.%d", path, j)
		if err := c.block(m.Role, bpath, b); err != nil {
			return err
		}
		hasText = hasText || b.Text != nil
		hasResult = hasResult || b.ToolResult != nil
	}
	if c.strict && hasText && hasResult {
		return fmt.Errorf("%s: Conversation blocks and tool result blocks cannot be provided in the same turn.", path)
	}
	return pairing(msgs, i)
}

func (c *checker) block(role, path string, b *wireBlock) error {
	if len(b.members) != 1 {
		return fmt.Errorf("%s: a ContentBlock must set exactly one member, got %v", path, b.members)
	}
	switch {
	case b.Text != nil:
		if strings.TrimSpace(*b.Text) == "" {
			return fmt.Errorf("The text field in the ContentBlock object at %s is blank. Add text to the text field, and try again.", path)
		}
	case b.CachePoint != nil:
		return c.cachePoint(path, b.CachePoint)
	case b.ToolUse != nil:
		if role != "assistant" {
			return fmt.Errorf("%s: toolUse blocks are only allowed in assistant messages", path)
		}
		if !c.toolConfig {
			return errors.New("The toolConfig field must be defined when using toolUse and toolResult content blocks.")
		}
		if err := checkIdent(path+".toolUse.toolUseId", b.ToolUse.ToolUseID); err != nil {
			return err
		}
		if err := checkIdent(path+".toolUse.name", b.ToolUse.Name); err != nil {
			return err
		}
		if in := bytes.TrimSpace(b.ToolUse.Input); len(in) == 0 || in[0] != '{' {
			return fmt.Errorf("%s.toolUse.input: the input must be a JSON object", path)
		}
	case b.ToolResult != nil:
		tr := b.ToolResult
		if role != "user" {
			return fmt.Errorf("%s: toolResult blocks are only allowed in user messages", path)
		}
		if !c.toolConfig {
			return errors.New("The toolConfig field must be defined when using toolUse and toolResult content blocks.")
		}
		if tr.Status != "" && tr.Status != "success" && tr.Status != "error" {
			return fmt.Errorf("Value '%s' at '%s.toolResult.status' failed to satisfy constraint: Member must satisfy enum value set: [success, error]", tr.Status, path)
		}
		if tr.Status == "error" && resultEmpty(tr.Content) {
			return fmt.Errorf("The content field at %s.toolResult cannot be empty when status value is error.", path)
		}
		return checkIdent(path+".toolResult.toolUseId", tr.ToolUseID)
	default:
		return fmt.Errorf("%s: unsupported content block member %s", path, b.members[0])
	}
	return nil
}

func resultEmpty(content []wireToolResultContent) bool {
	for _, rc := range content {
		if (rc.Text != nil && *rc.Text != "") || len(rc.JSON) > 0 {
			return false
		}
	}
	return true
}

// pairing enforces D.2.5 for message i: an assistant message's toolUse ids are all answered
// by the next message; a user message's toolResults each answer a distinct toolUse of the
// message before.
func pairing(msgs []wireMessage, i int) error {
	ids := func(m wireMessage, results bool) []string {
		var out []string
		for _, b := range m.Content {
			if results && b.ToolResult != nil {
				out = append(out, b.ToolResult.ToolUseID)
			} else if !results && b.ToolUse != nil {
				out = append(out, b.ToolUse.ToolUseID)
			}
		}
		return out
	}
	if msgs[i].Role == "assistant" {
		uses := ids(msgs[i], false)
		if len(uses) == 0 {
			return nil
		}
		if i+1 == len(msgs) {
			return fmt.Errorf("messages.%d.content: toolUse blocks must be followed by a user message with toolResult blocks for the Ids: %s", i, strings.Join(uses, ", "))
		}
		results := ids(msgs[i+1], true)
		var missing []string
		for _, id := range uses {
			if !slices.Contains(results, id) {
				missing = append(missing, id)
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("Expected toolResult blocks at messages.%d.content for the following Ids: %s", i+1, strings.Join(missing, ", "))
		}
		return nil
	}
	var uses []string
	if i > 0 {
		uses = ids(msgs[i-1], false)
	}
	results := ids(msgs[i], true)
	for j, id := range results {
		if !slices.Contains(uses, id) {
			return fmt.Errorf("messages.%d.content: the toolResult with toolUseId %s matches no toolUse block of the previous turn", i, id)
		}
		if slices.Contains(results[:j], id) {
			return fmt.Errorf("The number of toolResult blocks at messages.%d.content exceeds the number of toolUse blocks of previous turn.", i)
		}
	}
	return nil
}

func (c *checker) tools(tc *wireToolConfig) error {
	if tc == nil {
		return nil
	}
	if len(tc.Tools) == 0 {
		return errors.New("Value at 'toolConfig.tools' failed to satisfy constraint: Member must have length greater than or equal to 1")
	}
	seen := map[string]bool{}
	for k, t := range tc.Tools {
		path := fmt.Sprintf("toolConfig.tools.%d", k)
		if (t.ToolSpec == nil) == (t.CachePoint == nil) {
			return fmt.Errorf("%s: a Tool must set exactly one of toolSpec and cachePoint", path)
		}
		if t.CachePoint != nil {
			if err := c.cachePoint(path, t.CachePoint); err != nil {
				return err
			}
			continue
		}
		spec := t.ToolSpec
		if err := checkIdent(path+".toolSpec.name", spec.Name); err != nil {
			return err
		}
		if seen[spec.Name] {
			return fmt.Errorf("%s.toolSpec.name: the tool name %s is not unique", path, spec.Name)
		}
		seen[spec.Name] = true
		if spec.Description != nil && *spec.Description == "" {
			return fmt.Errorf("Value at '%s.toolSpec.description' failed to satisfy constraint: Member must have length greater than or equal to 1", path)
		}
		var schema struct {
			Type any `json:"type"`
		}
		if json.Unmarshal(spec.InputSchema.JSON, &schema) != nil || schema.Type != "object" {
			return fmt.Errorf("%s.toolSpec.inputSchema.json: The top level schema type must be object", path)
		}
	}
	return nil
}

// checkIdent applies the ToolName / ToolUseId constraint: 1-64 characters of [a-zA-Z0-9_-].
func checkIdent(path, s string) error {
	if n := len(s); n < 1 || n > 64 {
		return fmt.Errorf("Value at '%s' failed to satisfy constraint: Member must have length between 1 and 64", path)
	}
	for _, r := range s {
		if !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return fmt.Errorf("Value at '%s' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_-]+", path)
		}
	}
	return nil
}

// metadataOK reports whether s is 1-256 characters of [a-zA-Z0-9\s:_@$#=/+,-.] (D.8).
func metadataOK(s string) bool {
	if n := utf8.RuneCountInString(s); n < 1 || n > 256 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(" \t\n\r\f\v:_@$#=/+,-.", r)) {
			return false
		}
	}
	return true
}
