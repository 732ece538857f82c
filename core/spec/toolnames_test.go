package spec

import (
	"reflect"
	"slices"
	"testing"
)

// 03 BR-03, spec 01 §6.8.
func TestCamelToolKey(t *testing.T) {
	for in, want := range map[string]string{
		"read_file":                     "readFile",
		"copy_file":                     "copyFile",
		"ls":                            "ls",
		"archmax_workflow_enrich-order": "archmaxWorkflowEnrichOrder",
		"archmax_get_variables":         "archmaxGetVariables",
		"Fetch_URL":                     "FetchURL",
		"a__b":                          "aB",
		"_private":                      "Private",
		"trailing_":                     "trailing",
		"":                              "",
	} {
		if got := CamelToolKey(in); got != want {
			t.Errorf("CamelToolKey(%q) = %q, want %q", in, got, want)
		}
	}
}

// Spec 01 §6.8.
func TestWorkflowToolNames(t *testing.T) {
	if got := WorkflowToolName("enrich-order"); got != "archmax_workflow_enrich-order" {
		t.Errorf("WorkflowToolName = %q", got)
	}
	for name, want := range map[string]struct {
		slug string
		ok   bool
	}{
		"archmax_workflow_enrich-order": {"enrich-order", true},
		"archmax_workflow_Not_A_Slug":   {"Not_A_Slug", true},
		"archmax_workflow_":             {"", true},
		"archmax_advance":               {"", false},
		"workflow_x":                    {"", false},
	} {
		slug, ok := WorkflowSlugFromToolName(name)
		if slug != want.slug || ok != want.ok || IsWorkflowToolName(name) != want.ok {
			t.Errorf("WorkflowSlugFromToolName(%q) = %q, %v", name, slug, ok)
		}
	}
}

// Spec 01 §7.3, §7.4.
func TestToolSets(t *testing.T) {
	for name, want := range map[string]bool{
		"archmax_anything": true, "archmax_": true, "copy_file": true, "move_file": true, "remove_file": true,
		"read_file": false, "archmax": false, "task": false,
	} {
		if got := IsReservedToolName(name); got != want {
			t.Errorf("IsReservedToolName(%q) = %v", name, got)
		}
	}
	for name, want := range map[string]bool{"write_todos": true, "archmax_run": true, "remove_file": true, "archmax_advance": false, "task": false} {
		if got := IsEssentialTool(name); got != want {
			t.Errorf("IsEssentialTool(%q) = %v", name, got)
		}
	}
	for name, want := range map[string]bool{"archmax_raise": true, "archmax_get_history": true, "archmax_eval": true, "archmax_note": false, "archmax_workflow_x": false} {
		if got := IsControlTool(name); got != want {
			t.Errorf("IsControlTool(%q) = %v", name, got)
		}
	}
	// Every path argument's access is a PathAccess.
	for tool, args := range BuiltInToolPaths {
		for _, a := range args {
			if !slices.Contains(PathAccesses, a.Access) {
				t.Errorf("%s.%s access %q not in PathAccesses", tool, a.Arg, a.Access)
			}
		}
	}
	if got := BuiltInToolPaths[MoveFileTool]; !reflect.DeepEqual(got, []PathArg{{"source", "remove"}, {"destination", "write"}}) {
		t.Errorf("move_file paths %v", got)
	}
}
