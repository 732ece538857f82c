package session

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/workspace"
)

// HostTool is a tool the host registers with the engine (spec 03 §6.7): its model-facing
// description and JSON-schema input, the arguments that are workspace paths with their
// access (read, list, search, write, remove, execute; a list-valued argument is governed
// element by element), and its handler. A host tool is granted like any tool (tools.allow,
// allow_always) unless Essential, which makes it always on (the host's essentialTools).
type HostTool struct {
	Name        string
	Description string
	InputSchema json.RawMessage // a JSON Schema object whose top-level type is "object"
	Paths       []spec.PathArg
	Essential   bool
	// Handler runs a governed call. Its text is the tool result the caller reads; an error
	// answers the call with an error-status result carrying the error's text, and the turn
	// goes on (spec 02 §7.1).
	Handler func(ctx context.Context, call HostCall) (string, error)
}

// HostCall is one governed call of a host tool.
type HostCall struct {
	SessionID string
	State     string
	CallID    string
	Args      map[string]any
	// Workspace is the session's workspace: the session zone and the authored mounts, with
	// paths as the agent sees them (the session id never appears).
	Workspace *workspace.Workspace
	// IdempotencyKey is "<sessionId>/<turnId>/<callId>": for a call the model made, the same
	// on every attempt of that call — the model's answer is committed before any host tool
	// runs, so a step retried after a lost commit runs the same calls under the same keys
	// rather than asking the model again. A host tool must be idempotent on it (do the work
	// once per key, answer a repeat with the first result). A script's tools.* call has a key
	// unique to its attempt (a code state's script is run again from its start on a retry).
	IdempotencyKey string
}

// ReservedToolNameError: a host tool uses the runtime's reserved names (spec 01 §7.4).
type ReservedToolNameError struct{ Names []string }

func (e *ReservedToolNameError) Error() string {
	if len(e.Names) == 1 {
		return fmt.Sprintf("Host tool '%s' uses the reserved 'archmax_' prefix or a runtime file tool's name, which names the runtime's own tools. Rename it.", e.Names[0])
	}
	return fmt.Sprintf("Host tools '%s' use the reserved 'archmax_' prefix or runtime file tools' names, which name the runtime's own tools. Rename them.", strings.Join(e.Names, "', '"))
}

// Name returns the spec error name.
func (e *ReservedToolNameError) Name() string { return "ReservedToolNameError" }

// ToolPathsError: a host tool's path declarations are invalid (spec 01 §7.4, 03 GOV-50).
type ToolPathsError struct{ Tool, Reason string }

func (e *ToolPathsError) Error() string {
	return fmt.Sprintf("Host tool '%s' declares invalid path arguments: %s.", e.Tool, e.Reason)
}

// Name returns the spec error name.
func (e *ToolPathsError) Name() string { return "ToolPathsError" }

// checkHostTools validates the host tools at assembly (spec 01 §7.4, V-36).
func checkHostTools(tools []HostTool) (map[string]*HostTool, error) {
	byName := map[string]*HostTool{}
	var reserved []string
	for i := range tools {
		t := &tools[i]
		if spec.IsReservedToolName(t.Name) || implemented[t.Name] || spec.IsEssentialTool(t.Name) || t.Name == "eval" || t.Name == "task" {
			reserved = append(reserved, t.Name)
			continue
		}
		if !toolNamePattern.MatchString(t.Name) {
			return nil, fmt.Errorf("host tool %q: a tool name must match [a-zA-Z0-9_-]{1,64}", t.Name)
		}
		if _, dup := byName[t.Name]; dup {
			return nil, fmt.Errorf("host tool %q is registered twice", t.Name)
		}
		var schema struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(t.InputSchema, &schema); err != nil || schema.Type != "object" {
			return nil, fmt.Errorf("host tool %q: InputSchema must be a JSON Schema object with \"type\": \"object\"", t.Name)
		}
		if t.Handler == nil {
			return nil, fmt.Errorf("host tool %q has no handler", t.Name)
		}
		seen := map[string]bool{}
		for _, p := range t.Paths {
			if !slices.Contains(spec.PathAccesses, p.Access) {
				return nil, &ToolPathsError{Tool: t.Name, Reason: fmt.Sprintf("'%s' is not an access (%s)", p.Access, strings.Join(spec.PathAccesses, ", "))}
			}
			if p.Arg == "" || seen[p.Arg] {
				return nil, &ToolPathsError{Tool: t.Name, Reason: fmt.Sprintf("argument %q is empty or declared twice", p.Arg)}
			}
			seen[p.Arg] = true
		}
		byName[t.Name] = t
	}
	if len(reserved) > 0 {
		return nil, &ReservedToolNameError{Names: reserved}
	}
	return byName, nil
}
