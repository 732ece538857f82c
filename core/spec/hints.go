package spec

import (
	"slices"
	"strings"
)

// hints are the fix hints `archmax validate` prints under a finding, by diagnostic code
// (spec 01 §8.3 codes); a code without its own entry takes its family's (the part before
// the first "."), so a new rule is never printed without one. The message says what is
// wrong; the hint says what to do, and HintFor ends it with the authoring guide's section.
var hints = map[string]string{
	// families
	"yaml":         "write the file as one YAML mapping",
	"schema":       "match the key and value to the workflow.yaml reference",
	"spec":         "keep to the root keys a workflow.yaml holds: title, instructions, disabled, runtime, settings, tests, tools, skills, mounts, extensions, metadata, states",
	"slug":         "use lowercase letters and digits in segments joined by single hyphens, e.g. 'order-lookup'",
	"state":        "give the state the keys its type declares: an agent state instructions, a code state script, a human or grader state instructions and transitions",
	"transition":   "give each transition a 'to' naming a state of this workflow and a non-empty 'description'",
	"trigger":      "declare triggers as 'triggers: { <id>: { description?, requires?, returns?, session? } }' on the entry state",
	"signature":    "write each entry as '{ name, type, description }' with a lowercase snake_case name and a known type",
	"tools":        "grant tools by exact name in a state's 'tools.allow' (or 'tools.allow_always'); guard them with relative globs",
	"reference":    "write references as '${{ name }}' (or '${{ name.path }}') and declare the name in a trigger's or state's 'requires'",
	"human":        "a human state needs instructions for the person and one transition per decision it offers",
	"code":         "a code state declares 'script: scripts/<name>.js' and its transitions; its script decides",
	"grader":       "a grader state needs instructions for its judge and the transitions it may choose",
	"automated":    "leave the tool out of the code or grader state's grants",
	"governance":   "remove the entry that has no effect, or the one that cancels it",
	"instructions": "put values a state needs in variables the agent reads with archmax_get_variables",
	"settings":     "keep each setting within its limits",
	"tests":        "write the tests block as { caseTimeoutMs?, judge?, maxConcurrency: 1 }",
	"legacy":       "move hooks to a code state ('type: code', 'script: scripts/<name>.js') and rubrics to a grader state",
	"runtime":      "declare 'runtime: { version: \"1\" }' or leave the block out",
	"mounts":       "name mounts archmax.host.yaml declares under 'mounts:'; grant 'read_write' only where the host serves the mount writable",
	"skills":       "enable skills that exist as skills/<name>/SKILL.md whose frontmatter 'name:' is <name>",
	"delegation":   "grant 'archmax_workflow_<slug>' only for a sibling workflow that loads, declares a 'manual' trigger and does not delegate back",
	"script":       "fix the script so it parses as an ES module and imports only '@archmax-ai/harness/*'",
	"case":         "match the case document to the case grammar (title, description, steps); run 'archmax test' for the run-time checks",
	"kernel":       "the kernel refuses this grant at run time; grant a path or target the state can reach",
	"layout":       "keep one workflow.yaml per workflows/<slug>/ directory",
	"hooks":        "move hooks/ scripts to scripts/ and wire them as code states",
	"workspace":    "make the file a readable regular file inside the workspace (not a symlink loop or a link out of it)",
	// codes whose fix differs from their family's
	"guard.unlocked-reference":          "lock the variable before any agent state reaches the guard: set it in a code state with archmax_set_variables({ variables, lock: true }), or list it in the entering trigger's 'requires' (the host's variables arrive locked)",
	"tools.guard-never-matches":         "write the glob as the path is canonicalised: relative, single slashes, no '.' or '..' segments (e.g. 'scratchpad/**')",
	"yaml.encoding":                     "save the file as UTF-8",
	"yaml.syntax":                       "fix the YAML at that line: indentation with spaces, matching quotes and brackets, one document",
	"yaml.duplicate-key":                "keep one of the two keys: the mapping cannot hold both",
	"yaml.non-string-key":               "quote the key so it is a string",
	"yaml.alias-expansion":              "use aliases for small shared values only, never an alias inside its own anchor",
	"yaml.merge":                        "merge (<<) only mappings or lists of mappings",
	"spec.missing":                      "create workflows/<slug>/workflow.yaml, or check the workflow's name",
	"spec.not-a-mapping":                "the file must be a YAML mapping with 'states:' at its top",
	"spec.no-entry":                     "give the first state 'triggers: { manual: }' so a turn can start there",
	"spec.states-empty":                 "declare at least one state under 'states:'",
	"spec.instructions-missing":         "add root 'instructions:' saying what the workflow is for",
	"spec.disabled":                     "remove 'disabled: true' when the workflow may start turns again",
	"spec.name-key":                     "rename 'name' to 'title' and 'description' to 'instructions'",
	"state.unreachable":                 "add a transition or on_error route to the state, or delete it",
	"state.no-terminal-path":            "add a transition from the loop to a state with no transitions",
	"state.model-redundant":             "delete the state's 'model'",
	"state.requires-duplicate":          "list each variable once",
	"state.routing-unguided":            "add 'instructions' telling the agent when to take each transition",
	"state.on-error-self":               "route 'on_error' to another state, e.g. a human state that reviews failures",
	"state.on-error-unknown":            "name a state of this workflow in 'on_error'",
	"state.self-transition":             "route to another state; to run the check again, go through the state that does the work",
	"state.script-refused":              "remove 'script', or make the state 'type: code'",
	"transition.unknown-target":         "name a state of this workflow in 'to'",
	"transition.duplicate-target":       "merge the two transitions into one with a description covering both",
	"trigger.duplicate":                 "give each trigger id to one state",
	"trigger.session-unrequired":        "add the session path's root variable to the trigger's 'requires'",
	"human.requires":                    "move 'requires' to the state whose transition leads here",
	"human.key-refused":                 "remove the human state's 'budget'",
	"code.script-missing":               "create the file under workflows/<slug>/scripts/ or fix the 'script' path",
	"code.key-refused":                  "remove the key: a code state's script decides without a model",
	"grader.key-refused":                "remove the key: a grader never parks for a person",
	"grader.entry-state":                "start in an agent state that does the work, and route to the grader",
	"tools.advance-forbidden":           "remove archmax_advance from 'tools.forbid_always'",
	"tools.essential-inert":             "remove the essential tool from 'tools.allow_always'",
	"tools.scratchpad-inert":            "remove the grant, or widen its paths beyond scratchpad/",
	"tools.control-granted":             "remove the control tool from the grant",
	"tools.ungrantable":                 "remove 'task' from the grant: it cannot be granted",
	"tools.runtime-area":                "point the guard at your own folders (scratchpad/…, out/…), not a runtime-owned area",
	"reference.undeclared":              "declare the variable in a trigger's or the state's 'requires'",
	"tests.max-concurrency-unsupported": "set 'tests.maxConcurrency' to 1 or remove it",
	"skills.block-missing":              "add a root 'skills:' block ('allow_always: […]' or '{}') to say which bundles states reach",
	"mounts.block-missing":              "add a root 'mounts:' block to say which governed mounts states reach",
	"mounts.unknown":                    "name one of the mounts archmax.host.yaml declares",
	"delegation.cycle":                  "break the cycle: a workflow must not delegate, directly or not, to one already in its chain",
	"delegation.too-deep":               "flatten the chain to at most 3 delegations",
	"delegation.disabled":               "enable the target workflow or drop the grant",
	"script.foreign-import":             "import only '@archmax-ai/harness/*'; inline what the script needs",
	"case.unknown-trigger":              "name a trigger the workflow declares, or drop 'trigger' to start with 'manual'",
	"case.fixture-missing":              "create the fixture file under the workflow's tests/ folder or fix the 'from:' path",
	"hooks.leftover":                    "move hooks/ scripts into scripts/, wire them as code states, then delete hooks/",
}

// guide is, by code family, the authoring guide's section on what a finding is about: a page of
// docs/authoring/ and one of its headings (the docs test holds every entry to a heading).
var guide = map[string]string{
	"yaml":         "workflow-yaml.md#the-file",
	"schema":       "workflow-yaml.md#root-keys",
	"spec":         "workflow-yaml.md#root-keys",
	"slug":         "workflow-yaml.md#grammars",
	"state":        "workflow-yaml.md#state-keys-by-type",
	"transition":   "workflow-yaml.md#transitions",
	"trigger":      "triggers.md#triggers",
	"signature":    "triggers.md#signatures-requires-and-returns",
	"tools":        "governance.md#allow-and-forbid",
	"reference":    "governance.md#references-in-guards",
	"guard":        "governance.md#references-in-guards",
	"human":        "states.md#human-states",
	"code":         "states.md#code-states",
	"grader":       "states.md#grader-states",
	"automated":    "workflow-yaml.md#tools-on-a-state",
	"governance":   "governance.md#allow-and-forbid",
	"instructions": "workflow-yaml.md#instructions-on-a-state",
	"settings":     "workflow-yaml.md#settings",
	"tests":        "workflow-yaml.md#tests",
	"legacy":       "states.md#code-states",
	"extensions":   "workflow-yaml.md#extensions",
	"runtime":      "workflow-yaml.md#runtime",
	"mounts":       "governance.md#mounts",
	"skills":       "governance.md#skills",
	"delegation":   "parks.md#sub-workflows",
	"script":       "scripts.md#the-three-authoring-forms-code-states",
	"case":         "cases.md#top-level-keys",
	"kernel":       "governance.md#the-order-of-the-rules",
	"layout":       "workflow-yaml.md#the-file",
	"hooks":        "states.md#code-states",
	"workspace":    "README.md#a-workspace",
	"host":         "host-tools.md#the-keys",
}

// GuidePath is where the authoring guide lives, relative to the repository root.
const GuidePath = "docs/authoring/"

// HintFor returns the fix hint for a diagnostic code — its own, else its family's — followed
// by the guide's section on the family (GuideFor); "" when there is neither.
func HintFor(code string) string {
	family, _, _ := strings.Cut(code, ".")
	h, ok := hints[code]
	if !ok {
		h = hints[family]
	}
	ref := GuideFor(code)
	switch {
	case ref == "":
		return h
	case h == "":
		return "see " + ref
	}
	return h + " (" + ref + ")"
}

// GuideFor is the authoring guide's section on a diagnostic code's family, as a path from the
// repository root ("docs/authoring/governance.md#skills"), or "".
func GuideFor(code string) string {
	family, _, _ := strings.Cut(code, ".")
	if ref, ok := guide[family]; ok {
		return GuidePath + ref
	}
	return ""
}

// GuideRefs lists every section HintFor may name, as paths from the repository root, sorted.
func GuideRefs() []string {
	var out []string
	for _, ref := range guide {
		out = append(out, GuidePath+ref)
	}
	slices.Sort(out)
	return out
}

// HintFamilies lists the code families with a hint of their own, sorted.
func HintFamilies() []string {
	var out []string
	for code := range hints {
		if !strings.Contains(code, ".") {
			out = append(out, code)
		}
	}
	slices.Sort(out)
	return out
}

// WithHints fills the Hint of every finding that has none (HintFor its code) and returns
// diags.
func WithHints(diags []Diagnostic) []Diagnostic {
	for i := range diags {
		if diags[i].Hint == "" {
			diags[i].Hint = HintFor(diags[i].Code)
		}
	}
	return diags
}
