package spec

import (
	"fmt"
	"strings"
)

// WorkflowLoadError is a named workflow whose workflow.yaml cannot be used (spec 01
// §1.9, V-30): it failed to parse, is not a mapping, or holds schema or document-rule
// errors. Diagnostics holds every finding Parse reported, in order.
type WorkflowLoadError struct {
	Workflow    string
	File        string
	Diagnostics []Diagnostic
}

// Name is the reference error name, "WorkflowLoadError".
func (e *WorkflowLoadError) Name() string { return "WorkflowLoadError" }

// Error renders `Cannot load workflow '<slug>' (<path>): <problem>. Run 'archmax
// validate <slug>' for details.` (§1.9), where <problem> is the first error rendered
// `'<field>': <message>` (just the message when it has no field), its own final "."
// dropped so the sentence ends once.
func (e *WorkflowLoadError) Error() string {
	problem := "the spec is not usable"
	for _, d := range e.Diagnostics {
		if d.Severity != sevError {
			continue
		}
		problem = d.Message
		if d.Field != "" {
			problem = fmt.Sprintf("'%s': %s", d.Field, d.Message)
		}
		break
	}
	return fmt.Sprintf("Cannot load workflow '%s' (%s): %s. Run 'archmax validate %s' for details.",
		e.Workflow, e.File, strings.TrimSuffix(problem, "."), e.Workflow)
}
