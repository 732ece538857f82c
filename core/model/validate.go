package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// Bedrock's refusal texts (research/bedrock-converse.md D.2), reproduced exactly.
const (
	msgFirstNotUser   = "A conversation must start with a user message. Try again with a conversation that starts with a user message."
	msgNotAlternating = "A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again."
	msgToolConfig     = "The toolConfig field must be defined when using toolUse and toolResult content blocks."
)

// MaxCachePoints is the most cachePoint blocks one Converse request may carry, counted
// across system, messages and toolConfig (D.5, spec 02 §14.4).
const MaxCachePoints = 4

var (
	namePattern     = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	metadataPattern = regexp.MustCompile(`^[a-zA-Z0-9\s:_@$#=/+,\-.]{1,256}$`)
	metadataOther   = regexp.MustCompile(`[^a-zA-Z0-9\s:_@$#=/+,\-.]`)
)

// ValidateRequest reports the first thing in r that Bedrock Converse would refuse with a
// ValidationException, as *InvalidRequestError{Path, Message} with Bedrock's indexed path
// (e.g. "messages.3.content.0"); nil means the request may be sent.
//
// Checks run in this order: modelId; system blocks (text non-empty, D.1); messages in order
// — first message user (D.2.1), strict alternation (D.2.2), non-empty content (D.2.3),
// non-blank text (D.2.4), toolUse only from the assistant and toolResult only from the user,
// tool names and toolUse ids `[a-zA-Z0-9_-]{1,64}` (D.3, D.4), toolConfig present when any
// toolUse/toolResult exists (D.2.7), error results non-empty (D.2.8), each toolUse answered in
// the immediately next message and no orphan or extra toolResult (D.2.5); tool specs (unique
// valid names, non-empty description, top-level schema type object, D.4); at most
// MaxCachePoints cachePoints (D.5); requestMetadata keys and values (D.8).
//
// D.2.6 (text beside toolResult) is model-dependent and not checked here. A ToolSpec's empty
// Description means "absent" and is never sent, so it cannot be refused.
func ValidateRequest(r *Request) error {
	if r.ModelID == "" || len(r.ModelID) > 2048 {
		return invalid("modelId", "Member must have length between 1 and 2048")
	}
	v := validator{toolsDefined: len(r.Tools) > 0}
	for i, b := range r.System {
		path := fmt.Sprintf("system.%d", i)
		switch b.Kind {
		case BlockText:
			if b.Text == "" {
				return invalid(path+".text", fmt.Sprintf("Value at '%s.text' failed to satisfy constraint: Member must have length greater than or equal to 1", path))
			}
		case BlockCachePoint:
			if err := v.cachePoint(path, b.CacheTTL); err != nil {
				return err
			}
		default:
			return invalid(path, fmt.Sprintf("A system block must be text or cachePoint, got %q.", b.Kind))
		}
	}
	for i := range r.Messages {
		if err := v.message(r.Messages, i, true); err != nil {
			return err
		}
	}
	if err := v.tools(r); err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(r.Metadata)) {
		if !metadataPattern.MatchString(k) {
			return invalid("requestMetadata", fmt.Sprintf("The requestMetadata key %q must be 1-256 characters from [a-zA-Z0-9\\s:_@$#=/+,-.].", k))
		}
		if !metadataPattern.MatchString(r.Metadata[k]) {
			return invalid("requestMetadata."+k, fmt.Sprintf("The requestMetadata value %q must be 1-256 characters from [a-zA-Z0-9\\s:_@$#=/+,-.].", r.Metadata[k]))
		}
	}
	return nil
}

// ValidateHistory reports the first thing in the messages of a conversation, from index
// from on, that ValidateRequest would refuse in any request carrying them (with tools
// defined): what the engine checks before it commits a step, so no stored history can fail
// every later request. The last assistant message's toolUse blocks may still be unanswered,
// wholly or in part (calls in flight: a delegated park, children waiting for a slot); every
// toolResult must still answer a toolUse. toolUse ids before from count for uniqueness.
func ValidateHistory(msgs []Message, from int) error {
	v := validator{toolsDefined: true}
	for i := range min(from, len(msgs)) {
		for _, b := range msgs[i].Content {
			if b.Kind == BlockToolUse && b.ToolUse != nil {
				if v.toolUseAt == nil {
					v.toolUseAt = map[string]string{}
				}
				v.toolUseAt[b.ToolUse.ID] = fmt.Sprintf("messages.%d", i)
			}
		}
	}
	last := -1 // the last assistant message: its calls may still be in flight
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == RoleAssistant {
			last = i
			break
		}
	}
	for i := max(from, 0); i < len(msgs); i++ {
		if err := v.message(msgs, i, i != last); err != nil {
			return err
		}
	}
	return nil
}

// SanitizeMetadataValue maps s into Bedrock's requestMetadata alphabet (D.8, DESIGN.md §6):
// every character outside `[a-zA-Z0-9\s:_@$#=/+,-.]` becomes "_", the result is cut to 256
// characters, and an empty s becomes "_".
func SanitizeMetadataValue(s string) string {
	s = metadataOther.ReplaceAllLiteralString(s, "_")
	if len(s) > 256 { // only ASCII remains, so bytes are characters
		s = s[:256]
	}
	if s == "" {
		return "_"
	}
	return s
}

type validator struct {
	toolsDefined bool
	cachePoints  int
	// toolUseAt is where each toolUse id was first seen (its block's path): ids must be
	// unique across the conversation (Anthropic models refuse a repeated id in any message).
	toolUseAt map[string]string
}

func invalid(path, msg string) error { return &InvalidRequestError{Path: path, Message: msg} }

func (v *validator) cachePoint(path, ttl string) error {
	if ttl != "" && ttl != "5m" && ttl != "1h" {
		return invalid(path+".cachePoint.ttl", fmt.Sprintf("Value '%s' at '%s.cachePoint.ttl' failed to satisfy constraint: Member must satisfy enum value set: [5m, 1h]", ttl, path))
	}
	v.cachePoints++
	if v.cachePoints > MaxCachePoints {
		return invalid(path, fmt.Sprintf("A request may contain at most %d cachePoint blocks; %s is cachePoint number %d.", MaxCachePoints, path, v.cachePoints))
	}
	return nil
}

// message checks message i; forward also checks that its toolUse blocks are answered next.
func (v *validator) message(msgs []Message, i int, forward bool) error {
	m := msgs[i]
	path := fmt.Sprintf("messages.%d", i)
	switch {
	case m.Role != RoleUser && m.Role != RoleAssistant:
		return invalid(path+".role", fmt.Sprintf("Value '%s' at '%s.role' failed to satisfy constraint: Member must satisfy enum value set: [user, assistant]", m.Role, path))
	case i == 0 && m.Role != RoleUser:
		return invalid(path, msgFirstNotUser)
	case i > 0 && m.Role == msgs[i-1].Role:
		return invalid(path, msgNotAlternating)
	case len(m.Content) == 0:
		return invalid(path+".content", fmt.Sprintf("The content field in the Message object at %s is empty. Add a ContentBlock object to the content field and try again.", path))
	}
	for j, b := range m.Content {
		if err := v.block(m.Role, fmt.Sprintf("%s.content.%d", path, j), b); err != nil {
			return err
		}
	}
	if m.Role == RoleAssistant {
		if !forward {
			return nil
		}
		return answered(msgs, i)
	}
	return resultsMatch(msgs, i)
}

func (v *validator) block(role Role, path string, b Block) error {
	switch b.Kind {
	case BlockText:
		if strings.TrimSpace(b.Text) == "" {
			return invalid(path, fmt.Sprintf("The text field in the ContentBlock object at %s is blank. Add text to the text field, and try again.", path))
		}
	case BlockCachePoint:
		return v.cachePoint(path, b.CacheTTL)
	case BlockToolUse:
		tu := b.ToolUse
		switch {
		case tu == nil:
			return invalid(path+".toolUse", "The toolUse block is missing.")
		case role != RoleAssistant:
			return invalid(path+".toolUse", "A toolUse block is only allowed in an assistant message.")
		case !v.toolsDefined:
			return invalid("toolConfig", msgToolConfig)
		}
		if err := checkName(path+".toolUse.toolUseId", tu.ID); err != nil {
			return err
		}
		if first, seen := v.toolUseAt[tu.ID]; seen {
			return invalid(path+".toolUse.toolUseId", fmt.Sprintf("The toolUse id %s at %s repeats the id of the toolUse at %s; toolUse ids must be unique across the conversation.", tu.ID, path, first))
		}
		if v.toolUseAt == nil {
			v.toolUseAt = map[string]string{}
		}
		v.toolUseAt[tu.ID] = path
		if err := checkName(path+".toolUse.name", tu.Name); err != nil {
			return err
		}
		if !isJSONObject(tu.Input) {
			return invalid(path+".toolUse.input", "The toolUse input must be a JSON object.")
		}
	case BlockToolResult:
		tr := b.ToolResult
		switch {
		case tr == nil:
			return invalid(path+".toolResult", "The toolResult block is missing.")
		case role != RoleUser:
			return invalid(path+".toolResult", "A toolResult block is only allowed in a user message.")
		case !v.toolsDefined:
			return invalid("toolConfig", msgToolConfig)
		case tr.Status != "" && tr.Status != "success" && tr.Status != "error":
			return invalid(path+".toolResult.status", fmt.Sprintf("Value '%s' at '%s.toolResult.status' failed to satisfy constraint: Member must satisfy enum value set: [success, error]", tr.Status, path))
		case tr.Status == "error" && tr.Content == "":
			return invalid(path+".toolResult", fmt.Sprintf("The content field at %s.toolResult cannot be empty when status value is error.", path))
		}
		return checkName(path+".toolResult.toolUseId", tr.ToolUseID)
	default:
		return invalid(path, fmt.Sprintf("Unsupported content block kind %q.", b.Kind))
	}
	return nil
}

// answered checks D.2.5 forward: every toolUse of assistant message i has a toolResult in
// message i+1.
func answered(msgs []Message, i int) error {
	var want []string
	for _, b := range msgs[i].Content {
		if b.Kind == BlockToolUse {
			want = append(want, b.ToolUse.ID)
		}
	}
	if len(want) == 0 {
		return nil
	}
	if i+1 == len(msgs) {
		return invalid(fmt.Sprintf("messages.%d.content", i), fmt.Sprintf("The toolUse blocks at messages.%d must be followed by a user message with their toolResult blocks. Ids: %s", i, strings.Join(want, ", ")))
	}
	got := map[string]bool{}
	for _, b := range msgs[i+1].Content {
		if b.Kind == BlockToolResult && b.ToolResult != nil {
			got[b.ToolResult.ToolUseID] = true
		}
	}
	var missing []string
	for _, id := range want {
		if !got[id] {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return invalid(fmt.Sprintf("messages.%d.content", i+1), fmt.Sprintf("Expected toolResult blocks at messages.%d.content for the following Ids: %s", i+1, strings.Join(missing, ", ")))
	}
	return nil
}

// resultsMatch checks D.2.5 backward: every toolResult of user message i answers a distinct
// toolUse of message i-1.
func resultsMatch(msgs []Message, i int) error {
	uses := map[string]bool{}
	if i > 0 {
		for _, b := range msgs[i-1].Content {
			if b.Kind == BlockToolUse {
				uses[b.ToolUse.ID] = true
			}
		}
	}
	seen := map[string]bool{}
	for j, b := range msgs[i].Content {
		if b.Kind != BlockToolResult {
			continue
		}
		id := b.ToolResult.ToolUseID
		path := fmt.Sprintf("messages.%d.content.%d", i, j)
		if !uses[id] {
			return invalid(path, fmt.Sprintf("The toolResult block at %s has toolUseId %s, which matches no toolUse block of the previous turn.", path, id))
		}
		if seen[id] {
			return invalid(fmt.Sprintf("messages.%d.content", i), fmt.Sprintf("The number of toolResult blocks at messages.%d.content exceeds the number of toolUse blocks of previous turn.", i))
		}
		seen[id] = true
	}
	return nil
}

func (v *validator) tools(r *Request) error {
	if r.ToolsCachePoint && len(r.Tools) == 0 {
		return invalid("toolConfig.tools", "A tools cachePoint needs at least one toolSpec before it.")
	}
	names := map[string]int{}
	at := r.ToolsCachePointIndex()
	for k, t := range r.Tools {
		if r.ToolsCachePoint && k >= at {
			k++ // the cachePoint is a member of the tools list, before this spec
		}
		path := fmt.Sprintf("toolConfig.tools.%d.toolSpec", k)
		if err := checkName(path+".name", t.Name); err != nil {
			return err
		}
		if first, dup := names[t.Name]; dup {
			return invalid(path+".name", fmt.Sprintf("The tool name %s at %s.name duplicates toolConfig.tools.%d. Tool names must be unique.", t.Name, path, first))
		}
		names[t.Name] = k
		if !schemaIsObject(t.InputSchema) {
			return invalid(path+".inputSchema.json", "The top level schema type must be object.")
		}
	}
	if r.ToolsCachePoint {
		return v.cachePoint(fmt.Sprintf("toolConfig.tools.%d", at), r.CacheTTL)
	}
	return nil
}

func checkName(path, s string) error {
	if namePattern.MatchString(s) {
		return nil
	}
	if len(s) == 0 || len(s) > 64 {
		return invalid(path, fmt.Sprintf("Value at '%s' failed to satisfy constraint: Member must have length between 1 and 64", path))
	}
	return invalid(path, fmt.Sprintf("Value at '%s' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_-]+", path))
}

func isJSONObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{' && json.Valid(raw)
}

func schemaIsObject(raw json.RawMessage) bool {
	var s struct {
		Type any `json:"type"`
	}
	return isJSONObject(raw) && json.Unmarshal(raw, &s) == nil && s.Type == "object"
}
