package session

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/archmax-ai/archmax/core/kernel"
	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/spec"
)

// platformPrompt is the platform layer shipped with the runtime (spec 02 §14.1 item 1);
// a workspace overrides it with .platform/system/GRAPH_STATE.md. The lines between the
// top-level-only markers are left out of a child session's prompt.
const platformPrompt = `# How this run works

You are the agent of a governed workflow run. The run is a state machine: at every moment it stands in one state, and that state decides which tools you may use and which moves you may make. The current state's instructions and its transitions are given under the heading "Current state" — at the end of the latest message, or of this prompt — and change as the run moves.

- Do the current state's work with the tools you are offered. A call the workflow does not allow is refused with a reason; read it and adapt — it is not an error in the tool.
- When the state's work is done, move the run with ` + "`archmax_advance`" + ` to one of the listed transitions, giving the reason the next state should read. Only listed transitions exist.
- If the run cannot continue at all, end it with ` + "`archmax_raise`" + ` and a short code and reason. Use ` + "`archmax_reset`" + ` only to start over from the run's first state.
- Run variables hold what the run knows; read them with ` + "`archmax_get_variables`" + ` and record results with ` + "`archmax_set_variables`" + `. Variables set by the host are locked.
- Your own files belong under ` + "`scratchpad/`" + `; authored material (skills, AGENTS.md) is read-only.
- A message without a tool call ends your turn: write it for the person you are working with, and only when you are done for now.
<!-- top-level-only -->
- Name the run first: early on, set the ` + "`title`" + ` variable to a short, single-line label of the task (at most 200 characters). You may refine it later.
<!-- /top-level-only -->`

var (
	htmlComment  = regexp.MustCompile(`(?s)<!--.*?-->`)
	topLevelOnly = regexp.MustCompile(`(?s)<!-- top-level-only -->.*?<!-- /top-level-only -->`)
)

// staticPrompt is the cacheable prefix (spec 02 §14.1): platform, AGENTS.md, the host's
// systemPrompt, the workflow header and WORKFLOW.md prose — nothing about the position.
func (r *run) staticPrompt() string {
	if r.static == "" {
		r.static = r.buildStaticPrompt()
	}
	return r.static
}

func (r *run) buildStaticPrompt() string {
	platform := platformPrompt
	if r.wf.platform != "" {
		platform = r.wf.platform
	}
	if r.rec.Scope != nil {
		// a child is not asked to name the run (02 §8.6)
		platform = topLevelOnly.ReplaceAllString(platform, "")
	}
	platform = strings.NewReplacer("<!-- top-level-only -->\n", "", "<!-- /top-level-only -->", "").Replace(platform)
	var parts []string
	add := func(s string) {
		if s = strings.TrimSpace(s); s != "" {
			parts = append(parts, s)
		}
	}
	add(platform)
	add(r.wf.agents)
	add(r.e.cfg.SystemPrompt)
	add(renderWorkflowPrompt(r.sp))
	add(htmlComment.ReplaceAllString(r.wf.body, ""))
	return strings.Join(parts, "\n\n")
}

// renderWorkflowPrompt is the workflow header (spec 01 §1.6 item 4).
func renderWorkflowPrompt(sp *spec.MachineSpec) string {
	h := "# Workflow"
	if t := strings.TrimSpace(sp.Title); t != "" {
		h += ": " + t
	}
	if in := strings.TrimSpace(sp.Instructions); in != "" {
		h += "\n\n## Instructions\n\n" + in
	}
	return h
}

// callPrompt is the per-call content (spec 02 §14.3, §14.5): the active state's
// instructions, the session trigger's signature, the state's edges, its enabled skills and
// the clock line.
func (r *run) callPrompt(st *spec.State) string {
	var parts []string
	parts = append(parts, fmt.Sprintf("# Current state: %s", st.Slug))
	if in := strings.TrimSpace(st.Instructions); in != "" {
		parts = append(parts, in)
	}
	if trig := r.sp.Trigger(r.rec.CurrentTrigger); trig != nil {
		if s := renderSignature(trig); s != "" {
			parts = append(parts, s)
		}
	}
	parts = append(parts, r.renderTransitions(st))
	enabled := kernel.EnabledSkills(r.sp, st, r.wf.skills)
	if len(enabled) > 0 {
		parts = append(parts, "Skills enabled in this state (under `skills/`): "+strings.Join(enabled, ", ")+".")
	}
	if mounts := r.mach.EnabledMounts(st.Slug); len(mounts) > 0 {
		var items []string
		for _, m := range mounts {
			access := "read-only"
			if r.mach.MountWritable(st.Slug, m) {
				access = "read/write"
			}
			items = append(items, fmt.Sprintf("%s/ (%s)", m, access))
		}
		parts = append(parts, "Governed mounts reachable in this state: "+strings.Join(items, ", ")+".")
	}
	parts = append(parts, clockLine(r.promptNow()))
	return strings.Join(parts, "\n\n")
}

func (r *run) promptNow() time.Time {
	if t, ok := r.ctx.Value(promptClockKey{}).(time.Time); ok {
		return t
	}
	if r.e.cfg.PromptClock != nil {
		return *r.e.cfg.PromptClock
	}
	return r.e.cfg.Clock()
}

func renderSignature(t *spec.Trigger) string {
	line := func(e spec.SignatureEntry) string {
		s := "- " + e.Name
		if e.Type != "" {
			s += " (" + e.Type + ")"
		}
		if e.Description != "" {
			s += " — " + e.Description
		}
		return s
	}
	bare := func(es []spec.SignatureEntry) bool {
		for _, e := range es {
			if e.Type != "" || e.Description != "" {
				return false
			}
		}
		return true
	}
	names := func(es []spec.SignatureEntry) string {
		var n []string
		for _, e := range es {
			n = append(n, e.Name)
		}
		return strings.Join(n, ", ")
	}
	var out []string
	if len(t.Requires) > 0 {
		if bare(t.Requires) {
			out = append(out, "This run was started with: "+names(t.Requires)+".")
		} else {
			s := "This run was started with:"
			for _, e := range t.Requires {
				s += "\n" + line(e)
			}
			out = append(out, s)
		}
	}
	if len(t.Returns) > 0 {
		if bare(t.Returns) {
			out = append(out, "This run must set "+names(t.Returns)+" with `archmax_set_variables` — it does not complete until every one is set.")
		} else {
			s := "This run must set these with `archmax_set_variables` — it does not complete until every one is set:"
			for _, e := range t.Returns {
				s += "\n" + line(e)
			}
			out = append(out, s)
		}
	}
	return strings.Join(out, "\n\n")
}

func (r *run) renderTransitions(st *spec.State) string {
	if st.IsTerminal() {
		return "This state is terminal: no transition leads out of it. Finish its work and stop."
	}
	s := "Transitions — choose one with `archmax_advance` when this state's work is done:"
	for _, t := range st.Transitions {
		var marks []string
		if t.Type != "" && t.Type != "none" {
			marks = append(marks, t.Type)
		}
		if target := r.sp.State(t.To); target != nil {
			if target.Type == "human" {
				marks = append(marks, "human decision node")
			}
			if target.IsTerminal() {
				marks = append(marks, "terminal")
			}
		}
		m := ""
		if len(marks) > 0 {
			m = " (" + strings.Join(marks, ", ") + ")"
		}
		s += fmt.Sprintf("\n- to `%s`%s — %s", t.To, m, strings.TrimSpace(t.Description))
	}
	return s
}

// clockLine renders "now" rounded down to ten minutes (spec 02 §14.5).
func clockLine(now time.Time) string {
	u := now.UTC().Truncate(10 * time.Minute)
	s := fmt.Sprintf("Current date and time: %s UTC (%s), rounded down to the nearest 10 minutes — it can be that much behind.", u.Format("2006-01-02 15:04"), u.Weekday())
	if tz := os.Getenv("TZ"); tz != "" && tz != "UTC" {
		if loc, err := time.LoadLocation(tz); err == nil {
			l := now.In(loc).Truncate(10 * time.Minute)
			when := l.Format("15:04")
			if l.Format("2006-01-02") != u.Format("2006-01-02") {
				when = l.Format("2006-01-02 15:04")
			}
			s += fmt.Sprintf(" Locally that is %s in %s.", when, tz)
		}
	}
	return s
}

// systemBlocks assembles the system prompt of a request without prompt caching: the static
// prefix, then the per-call content (promptcache.go lays a cached request out).
func (r *run) systemBlocks(st *spec.State) []model.Block {
	return []model.Block{{Kind: model.BlockText, Text: r.staticPrompt()}, {Kind: model.BlockText, Text: r.callPrompt(st)}}
}
