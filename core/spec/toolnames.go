package spec

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Runtime tool names and limits (spec 01 §6.8, §7.1, §7.5).
const (
	ArchmaxToolPrefix  = "archmax_"
	AdvanceTool        = "archmax_advance"
	RaiseTool          = "archmax_raise"
	WaitTool           = "archmax_wait"
	ResetTool          = "archmax_reset"
	EvalTool           = "archmax_eval"
	RunTool            = "archmax_run"
	GetVariablesTool   = "archmax_get_variables"
	SetVariablesTool   = "archmax_set_variables"
	GetHistoryTool     = "archmax_get_history"
	NoteTool           = "archmax_note" // carrier of runtime notes; never a tool
	WorkflowToolPrefix = "archmax_workflow_"
	CopyFileTool       = "copy_file"
	MoveFileTool       = "move_file"
	RemoveFileTool     = "remove_file"
	// ForbidAnyTool is the forbid entry's tool name that matches every tool (spec 01 §3.3.10).
	ForbidAnyTool = "*"
	// ManualTrigger is MANUAL_TRIGGER and DEFAULT_TRIGGER_ID (spec 01 §4.3).
	ManualTrigger = "manual"
	// MaxAdvanceEvidence caps archmax_advance evidence paths.
	MaxAdvanceEvidence = 20
	// ToolOutputPreviewCap is the length of a tool-result preview, in characters.
	ToolOutputPreviewCap = 4096
	// DefaultSubWorkflowDepth bounds delegations deep (a root's child is depth 1).
	DefaultSubWorkflowDepth = 3
	// DefaultSubWorkflowConcurrency bounds in-flight children per parent session.
	DefaultSubWorkflowConcurrency = 4
)

// EssentialTools are always disclosed and permitted in an agent state, never declared;
// a state entry naming one narrows it, a forbid removes it (spec 01 §7.3).
var EssentialTools = []string{"ls", "read_file", "write_file", "edit_file", "glob", "grep", "write_todos", EvalTool, RunTool, CopyFileTool, MoveFileTool, RemoveFileTool}

// AutomatedExcludedTools are never offered to code or grader states, even when granted
// (spec 01 §7.6).
var AutomatedExcludedTools = []string{"write_todos", EvalTool, RunTool, WaitTool, ResetTool}

// UngrantableTools may never be granted; the kernel refuses them everywhere (spec 01 §7.6).
var UngrantableTools = []string{"task"}

// HarnessControlTools are the harness-owned control tools; delegation tools are not
// among them (spec 01 §7.3, 1.0 reading with archmax_raise and archmax_get_history).
var HarnessControlTools = []string{AdvanceTool, ResetTool, WaitTool, EvalTool, RunTool, GetVariablesTool, SetVariablesTool, RaiseTool, GetHistoryTool}

// PathAccesses are the kinds of access a path argument grants (spec 01 §7.3).
var PathAccesses = []string{"read", "list", "search", "write", "remove", "execute"}

// PathArg names one path argument of a tool and the access it exercises.
type PathArg struct {
	Arg    string `json:"arg"`
	Access string `json:"access"`
}

// BuiltInToolPaths maps each built-in tool to its path arguments (spec 01 §7.3,
// BUILT_IN_TOOL_PATHS; 03 GOV-53, BR-23). Treat as read-only.
var BuiltInToolPaths = map[string][]PathArg{
	"ls":           {{"path", "list"}},
	"read_file":    {{"file_path", "read"}},
	"write_file":   {{"file_path", "write"}},
	"edit_file":    {{"file_path", "write"}},
	"glob":         {{"path", "search"}},
	"grep":         {{"path", "search"}},
	CopyFileTool:   {{"source", "read"}, {"destination", "write"}},
	MoveFileTool:   {{"source", "remove"}, {"destination", "write"}},
	RemoveFileTool: {{"file_path", "remove"}},
	RunTool:        {{"file_path", "execute"}},
}

// IsEssentialTool reports whether name is one of EssentialTools.
func IsEssentialTool(name string) bool { return slices.Contains(EssentialTools, name) }

// IsControlTool reports whether name is one of HarnessControlTools.
func IsControlTool(name string) bool { return slices.Contains(HarnessControlTools, name) }

// IsReservedToolName reports whether a host tool may not take name: it starts with
// "archmax_" or is a runtime file tool (spec 01 §7.4, ReservedToolNameError).
func IsReservedToolName(name string) bool {
	return strings.HasPrefix(name, ArchmaxToolPrefix) || name == CopyFileTool || name == MoveFileTool || name == RemoveFileTool
}

// WorkflowToolName is the delegation tool for a workflow slug, the slug verbatim:
// "enrich-order" ⇒ "archmax_workflow_enrich-order" (spec 01 §6.8).
func WorkflowToolName(slug string) string { return WorkflowToolPrefix + slug }

// WorkflowSlugFromToolName returns everything after "archmax_workflow_" without
// checking its shape, or false when name lacks the prefix (spec 01 §6.8).
func WorkflowSlugFromToolName(name string) (string, bool) {
	if slug, ok := strings.CutPrefix(name, WorkflowToolPrefix); ok {
		return slug, true
	}
	return "", false
}

// IsWorkflowToolName reports whether name has the delegation prefix (spec 01 §6.8).
func IsWorkflowToolName(name string) bool { return strings.HasPrefix(name, WorkflowToolPrefix) }

// CamelToolKey is a tool's camelCase sandbox key (spec 01 §6.8, 03 BR-03): split on
// '_' and '-', keep the first segment as is, upper-case the first letter of each later
// non-empty segment, concatenate: "archmax_workflow_enrich-order" ⇒
// "archmaxWorkflowEnrichOrder".
func CamelToolKey(name string) string {
	segments := strings.Split(strings.ReplaceAll(name, "-", "_"), "_")
	var b strings.Builder
	b.WriteString(segments[0])
	for _, s := range segments[1:] {
		if s == "" {
			continue
		}
		r, size := utf8.DecodeRuneInString(s)
		b.WriteRune(unicode.ToUpper(r))
		b.WriteString(s[size:])
	}
	return b.String()
}
