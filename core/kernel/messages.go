package kernel

// Refusal reasons of the governance kernel (spec 03 §6.2–§6.6, GOV-10…GOV-47; CS-35). They are a
// compatibility contract — models, scripts and cases read them — and follow the reference
// implementation @archmax-ai/harness (MIT; see NOTICE). Changing one is a contract change.

import (
	"fmt"
	"strings"

	"github.com/archmax-ai/archmax/core/spec"
)

// reasonPathArgument: GOV-25 (text is ours, DECISIONS K-2).
func reasonPathArgument(tool, arg string) string {
	return fmt.Sprintf("[workflow] BLOCKED: '%s' argument '%s' must be a path string or a list of path strings; nothing else passes governance.", tool, arg)
}

// reasonGovernancePlane: GOV-21.
func reasonGovernancePlane(tool, path string) string {
	return fmt.Sprintf("[workflow] BLOCKED: '%s' on '%s' addresses the authoring plane ('%s/'), which holds the workflow definitions, their code-state scripts and their test cases. The harness reads it through the authoring backend; nothing running inside a run can.", tool, path, AuthoringPrefix)
}

// reasonHostFile: zone.governance-plane for the host file, whoever calls.
func reasonHostFile(tool, path string) string {
	return fmt.Sprintf("[workflow] BLOCKED: '%s' on '%s' addresses the host configuration ('%s'), which belongs to the deployment: no agent, script or tool reads or writes it, and nothing in the workspace may take its name.", tool, path, HostFile)
}

// reasonHostRule: a host policy rule's block (the reason the host file gives).
func reasonHostRule(tool, on, id, reason string) string {
	return fmt.Sprintf("[workflow] BLOCKED: '%s'%s is refused by the host's rule '%s': %s", tool, on, id, reason)
}

// reasonReplyOnly: GOV-20b.
func reasonReplyOnly(tool string) string {
	return fmt.Sprintf("[workflow] BLOCKED: '%s' cannot run — this run is parked and a person is deciding what happens next. Reply to them in text; you cannot act until the run resumes.", tool)
}

// reasonEval: GOV-20.
const reasonEval = "[workflow] BLOCKED: an unnamespaced `eval` tool is never governed — use `archmax_eval`, the runtime's own code interpreter."

// reasonUngrantable: GOV-20a (1.0 wording is ours, DECISIONS K-3).
func reasonUngrantable(tool string) string {
	return fmt.Sprintf("[workflow] BLOCKED: '%s' is not a tool any state may call. To hand work to another workflow, call its delegation tool 'archmax_workflow_<slug>' where the state allows it.", tool)
}

// reasonReadOnly: GOV-23.
func reasonReadOnly(tool, path, mount string) string {
	return fmt.Sprintf("[workflow] BLOCKED: '%s' on '%s' targets a read-only mount ('%s'). Authored content is mounted read-only — write your files under 'scratchpad/…' (persisted per-session in the session store).", tool, path, mount)
}

// reasonRuntimeInternal: GOV-24.
func reasonRuntimeInternal(tool, path string) string {
	return fmt.Sprintf("[workflow] BLOCKED: '%s' on '%s' targets a harness-internal run area ('checkpoints/', 'artifacts/', '_specs/'). These hold the runtime's own bookkeeping and are not part of your workspace — use 'scratchpad/…' for your own files.", tool, path)
}

// reasonRuntimeManaged: GOV-23a.
func reasonRuntimeManaged(tool, path string) string {
	return fmt.Sprintf("[workflow] BLOCKED: '%s' on '%s' targets a runtime-owned area ('large_tool_results/', 'conversation_history/'), where the runtime offloads oversized context. You may read those files; write your own under 'scratchpad/…'.", tool, path)
}

// reasonSkillForbidden: GOV-41 skill.forbidden; by is "'skills.forbid_always' denies in
// every state" or "state '<s>' forbids".
func reasonSkillForbidden(tool, path, slug, by string, enabled []string) string {
	return fmt.Sprintf("[workflow] BLOCKED: '%s' on '%s' belongs to the skill '%s', which %s. A denial beats every grant. %s", tool, path, slug, by, enabledText(enabled))
}

// reasonSkillNotAllowed: GOV-41 skill.not-allowed.
func reasonSkillNotAllowed(tool, path, slug, state string, enabled []string) string {
	return fmt.Sprintf("[workflow] BLOCKED: '%s' on '%s' belongs to the skill '%s', which is not enabled in state '%s'. %s", tool, path, slug, state, enabledText(enabled))
}

// reasonSkillOnly: GOV-22 script.skill-only (1.0 wording "code-state scripts", DECISIONS).
func reasonSkillOnly(path string) string {
	return fmt.Sprintf("[workflow] BLOCKED: '%s' may only execute scripts that live in a skill bundle, and '%s' is not in one. Scripts the agent runs belong in 'skills/<capability>/scripts/'; code-state scripts live on the authoring plane and are run by the harness, never by the agent.", spec.RunTool, path)
}

// reasonSkillInherited: GOV-36 skill.forbidden from an ancestor's skills.forbid_always.
func reasonSkillInherited(tool, path, slug, source string) string {
	return fmt.Sprintf("[workflow] BLOCKED: '%s' on '%s' belongs to the skill '%s', which workflow '%s' denies in every state it delegates to (skills.forbid_always). A denial beats every grant.", tool, path, slug, source)
}

// reasonMountInherited: GOV-36 mount.forbidden from an ancestor's mounts.forbid_always.
func reasonMountInherited(tool, path, mount, source string) string {
	return fmt.Sprintf("[workflow] BLOCKED: '%s' on '%s' is under the mount '%s', which workflow '%s' denies in every state it delegates to (mounts.forbid_always). A denial beats every grant.", tool, path, mount, source)
}

// reasonMountForbidden: GOV-47 mount.forbidden; by is "'mounts.forbid_always' denies in
// every state" or "state '<s>' forbids".
func reasonMountForbidden(tool, path, mount, by string, enabled []string) string {
	return fmt.Sprintf("[workflow] BLOCKED: '%s' on '%s' is under the mount '%s', which %s. A denial beats every grant. %s", tool, path, mount, by, mountsHereText(enabled))
}

// reasonMountNotAllowed: GOV-47 mount.not-allowed.
func reasonMountNotAllowed(tool, path, mount, state string, enabled []string) string {
	return fmt.Sprintf("[workflow] BLOCKED: '%s' on '%s' is under the mount '%s', which state '%s' does not have. The path exists; this state was not given it. %s", tool, path, mount, state, mountsHereText(enabled))
}

// reasonMountReadOnly: GOV-47 mount.read-only.
func reasonMountReadOnly(tool, path, mount, state string) string {
	return fmt.Sprintf("[workflow] BLOCKED: '%s' on '%s' targets the mount '%s', which state '%s' may read but not write ('access: read'). Write your files under 'scratchpad/…' instead.", tool, path, mount, state)
}

func mountsHereText(enabled []string) string {
	if len(enabled) == 0 {
		return "This state has no governed mount."
	}
	return "Mounts available here: " + strings.Join(enabled, ", ") + "."
}

// reasonRequires: CS-35 transition.requires (the engine prefixes "archmax_advance rejected: ").
func reasonRequires(from string, unset []string) string {
	if len(unset) == 1 {
		return fmt.Sprintf("cannot leave '%s' yet: '%s' is not set. Record it with archmax_set_variables, then advance.", from, unset[0])
	}
	return fmt.Sprintf("cannot leave '%s' yet: '%s' are not set. Record them with archmax_set_variables, then advance.", from, strings.Join(unset, "', '"))
}

// reasonNoEdge: CS-35 transition.no-edge; targets are the state's declared targets.
func reasonNoEdge(from, to string, targets []string) string {
	if len(targets) == 0 {
		return fmt.Sprintf("cannot advance from '%s' to '%s'. No transitions from this state.", from, to)
	}
	return fmt.Sprintf("cannot advance from '%s' to '%s'. Valid target slugs: %s.", from, to, strings.Join(targets, ", "))
}

// reasonForbidden: GOV-31 tool.forbidden / tool.forbidden-here; on is "" or " on '<path>'";
// where is "the workflow", "the workflow inherited from workflow '<source>'" (GOV-36) or
// "state '<state>'".
func reasonForbidden(tool, on, where, key string) string {
	return fmt.Sprintf("[workflow] BLOCKED: '%s'%s is forbidden by %s (%s). A denial beats every grant, so no allow entry here permits it.", tool, on, where, key)
}

// reasonImpliedRead: tool.implied-read (K17-6; text is ours). inner is the refusal a
// read_file of the file gets.
func reasonImpliedRead(tool, path, inner string) string {
	return fmt.Sprintf("[workflow] BLOCKED: '%s' would expose the contents of '%s', which this call may not read: %s", tool, path, strings.TrimPrefix(inner, "[workflow] BLOCKED: "))
}

// reasonUnresolved: GOV-33 tool.unresolved-variable (terminal).
func reasonUnresolved(tool, state, glob, detail string) string {
	return fmt.Sprintf("[workflow] FAILED: '%s' in state '%s' is guarded by '%s', which could not be resolved — %s. The run cannot continue against a guard the harness cannot evaluate.", tool, state, glob, detail)
}

func enabledText(enabled []string) string {
	if len(enabled) == 0 {
		return "No skill is enabled in this state."
	}
	return "Skills enabled here: " + strings.Join(enabled, ", ") + "."
}

// notAllowedReason: GOV-10 tool.not-allowed.
func (p *Policy) notAllowedReason(st *spec.State, a Action) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[workflow] BLOCKED: '%s'", a.Tool)
	if fp := filePathOf(a); fp != "" {
		fmt.Fprintf(&b, " on '%s'", fp)
	}
	if to, ok := a.Args["to"].(string); ok && to != "" {
		fmt.Fprintf(&b, " (to='%s')", to)
	}
	fmt.Fprintf(&b, " is not allowed in state '%s'.\n", a.State)
	permits := "nothing beyond the controls"
	if p.Surface != nil {
		if s := p.Surface(a.State); len(s) > 0 {
			permits = strings.Join(s, ", ")
		}
	}
	fmt.Fprintf(&b, "Allowed in '%s': %s.\n", a.State, permits)
	if st != nil && st.IsTerminal() {
		b.WriteString("This state ends automatically once you finish — do not call archmax_advance.")
	} else {
		b.WriteString("Complete the current state's work and call archmax_advance when ready to move on.")
	}
	return b.String()
}
