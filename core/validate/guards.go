package validate

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/archmax-ai/archmax/core/machine"
	"github.com/archmax-ai/archmax/core/sandbox"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/store"
)

// guardRefs: a guard glob's ${{x}} must not name a variable the model may rewrite unlocked
// before the guarded call (warning guard.unlocked-reference). A guard that resolves a
// variable decides against whatever the variable holds when the call is made; if a state's
// model can set that variable first (archmax_set_variables without a lock), it can point
// the guard at any value — approve's grants/${{area}}.md at another area's grant file.
//
// The analysis is static, over the state graph (transitions, on_error routes, and
// archmax_reset back to every entry state), per guard and per variable x:
//
//   - Locked on arrival (must-analysis): at an entry state, x is locked when every trigger
//     declared there requires it (the host's variables arrive locked) or x is `trigger`; a
//     transition out of a code state whose script locks x carries it locked; an on_error
//     route carries only what was locked on arrival (the script may have failed before its
//     lock); `title` is never locked.
//   - Writers: the agent and grader states (their model) that offer archmax_set_variables and
//     where x is not locked on arrival. Code states are the author's own code and never
//     count as writers; human states write nothing (their handoff is reply-only).
//   - A writer precedes the guarded state when a path leads from it there (the guarded state
//     itself included, a model writing first and calling second) without passing a code
//     state whose script locks x: that state's locked write replaces what the model wrote.
//     A workflow-wide guard (tools.allow_always, tools.forbid_always) applies in every state.
//
// Scripts are read, not run (sandbox.ScanVariableWrites): a code state locks x when its
// script holds a literal archmax_set_variables call writing x with `lock: true`, and is then
// assumed to lock it on every exit but on_error — a lock inside a branch counts as always
// taken. Any write the scan cannot read locks nothing. Host seeds the assembly adds
// (Config.Seeds) and values a delegation passes are not known here unless the entering
// trigger requires them.
func (v *run) guardRefs() error {
	if len(v.sp.States) == 0 {
		return nil
	}
	g, err := v.lockGraph()
	if err != nil {
		return err
	}
	check := func(field string, st *spec.State, entries []spec.ToolEntry) {
		for i, e := range entries {
			for j, glob := range e.Paths {
				v.guardRef(g, fmt.Sprintf("%s.%d.paths.%d", field, i, j), st, e.Tool, glob)
			}
			for _, a := range e.Args {
				for j, glob := range a.Globs {
					v.guardRef(g, fmt.Sprintf("%s.%d.args.%s.%d", field, i, a.Name, j), st, e.Tool, glob)
				}
			}
		}
	}
	check("tools.allow_always", nil, v.sp.Tools.Allow)
	check("tools.forbid_always", nil, v.sp.Tools.Forbid)
	for _, st := range v.sp.States {
		if g.reached[st.Slug] {
			check("states."+st.Slug+".tools.allow", st, st.Tools.Allow)
			check("states."+st.Slug+".tools.forbid", st, st.Tools.Forbid)
		}
	}
	return nil
}

// lockGraph is the state graph with what the analysis needs of each state.
type lockGraph struct {
	sp      *spec.MachineSpec
	next    map[string][]edge // out-edges by state
	reached map[string]bool   // reachable from an entry state
	writes  map[string]sandbox.VariableWrites
	model   map[string]bool // the state's model may call archmax_set_variables
}

// edge is one move out of a state; onError marks an on_error route.
type edge struct {
	to      string
	onError bool
}

func (v *run) lockGraph() (*lockGraph, error) {
	g := &lockGraph{sp: v.sp, next: map[string][]edge{}, reached: map[string]bool{}, writes: map[string]sandbox.VariableWrites{}, model: map[string]bool{}}
	m := machine.New(v.sp, func(string) bool { return true })
	var entries []string
	for _, st := range v.sp.States {
		if len(st.Triggers) > 0 {
			entries = append(entries, st.Slug)
		}
	}
	for _, st := range v.sp.States {
		surface := m.Surface(st.Slug)
		for _, t := range st.Transitions {
			g.next[st.Slug] = append(g.next[st.Slug], edge{to: t.To})
		}
		if st.OnError != "" {
			g.next[st.Slug] = append(g.next[st.Slug], edge{to: st.OnError, onError: true})
		}
		if slices.Contains(surface, spec.ResetTool) {
			for _, e := range entries {
				g.next[st.Slug] = append(g.next[st.Slug], edge{to: e})
			}
		}
		switch st.Type {
		case "code":
			if !spec.IsScriptPath(st.Script) {
				continue // V-07's finding; nothing to read
			}
			body, err := v.files.Read(v.ctx, path.Join("workflows", v.slug, st.Script))
			if errors.Is(err, store.ErrNotFound) {
				continue // V-22's finding
			}
			if err != nil {
				return nil, err
			}
			if w, err := sandbox.ScanVariableWrites(st.Script, body); err == nil {
				g.writes[st.Slug] = w
			}
		case "human":
		default:
			g.model[st.Slug] = slices.Contains(surface, spec.SetVariablesTool)
		}
	}
	var walk func(string)
	walk = func(s string) {
		if g.reached[s] || v.sp.State(s) == nil {
			return
		}
		g.reached[s] = true
		for _, e := range g.next[s] {
			walk(e.to)
		}
	}
	for _, e := range entries {
		walk(e)
	}
	return g, nil
}

// locks reports whether state s's script locks x (literally).
func (g *lockGraph) locks(s, x string) bool {
	return x != spec.TitleVariable && slices.Contains(g.writes[s].Locked, x)
}

// lockedOnArrival is the must-analysis: for each reachable state, whether x is locked on
// every way into it.
func (g *lockGraph) lockedOnArrival(x string) map[string]bool {
	in := map[string]bool{}
	for s := range g.reached {
		in[s] = x != spec.TitleVariable // top: no way in seen yet
	}
	if x == spec.TitleVariable {
		return in
	}
	for changed := true; changed; {
		changed = false
		for _, st := range g.sp.States {
			s := st.Slug
			if !g.reached[s] {
				continue
			}
			v := true
			if len(st.Triggers) > 0 {
				for _, t := range st.Triggers {
					v = v && (x == spec.TriggerVariable || slices.ContainsFunc(t.Requires, func(e spec.SignatureEntry) bool { return e.Name == x }))
				}
			}
			for _, p := range g.sp.States {
				if !g.reached[p.Slug] {
					continue
				}
				for _, e := range g.next[p.Slug] {
					if e.to == s {
						v = v && (in[p.Slug] || !e.onError && g.locks(p.Slug, x))
					}
				}
			}
			if v != in[s] {
				in[s], changed = v, true
			}
		}
	}
	return in
}

// reaches reports whether a path leads from s to target without passing a state (other than
// s) whose script locks x; s reaches itself.
func (g *lockGraph) reaches(s, target, x string) bool {
	seen := map[string]bool{s: true}
	queue := []string{s}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if cur == target {
			return true
		}
		if cur != s && g.locks(cur, x) {
			continue
		}
		for _, e := range g.next[cur] {
			if !seen[e.to] {
				seen[e.to] = true
				queue = append(queue, e.to)
			}
		}
	}
	return false
}

// guardRef checks one guard glob of tool, declared on st (nil: workflow-wide).
func (v *run) guardRef(g *lockGraph, field string, st *spec.State, tool, glob string) {
	refs, bad := spec.ParseReferences(glob)
	if bad != nil {
		return // the reference rules report a malformed reference
	}
	var seen []string
	for _, ref := range refs {
		x := ref.Name
		if slices.Contains(seen, x) || x == spec.TriggerVariable {
			continue
		}
		seen = append(seen, x)
		if st != nil && g.locks(st.Slug, x) {
			continue // a code state locking x runs its own calls against its own value
		}
		in := g.lockedOnArrival(x)
		var writers []string
		for _, w := range g.sp.States {
			if !g.reached[w.Slug] || !g.model[w.Slug] || in[w.Slug] {
				continue
			}
			if st == nil || g.reaches(w.Slug, st.Slug, x) {
				writers = append(writers, w.Slug)
			}
		}
		if len(writers) == 0 {
			continue
		}
		where := " (workflow-wide)"
		if st != nil {
			where = fmt.Sprintf(" in state '%s'", st.Slug)
		}
		msg := fmt.Sprintf("the guard '%s' on %s%s reads ${{%s}}, which the model in %s may set without a lock before the call, pointing the guard at a value of its choosing",
			glob, tool, where, x, quoteStates(writers))
		var unlocked []string
		for _, c := range g.sp.States {
			if g.reached[c.Slug] && slices.Contains(g.writes[c.Slug].Unlocked, x) {
				unlocked = append(unlocked, c.Slug)
			}
		}
		if len(unlocked) > 0 && x != spec.TitleVariable {
			msg += fmt.Sprintf(" (code %s writes it without lock: true)", quoteStates(unlocked))
		}
		v.add("warning", "guard.unlocked-reference", field, st, msg)
	}
}

// quoteStates lists state slugs as "state 'a'" or "states 'a', 'b' and 2 more".
func quoteStates(slugs []string) string {
	const show = 3
	q := make([]string, 0, min(len(slugs), show))
	for _, s := range slugs[:min(len(slugs), show)] {
		q = append(q, "'"+s+"'")
	}
	out := strings.Join(q, ", ")
	if len(slugs) > show {
		out += fmt.Sprintf(" and %d more", len(slugs)-show)
	}
	if len(slugs) == 1 {
		return "state " + out
	}
	return "states " + out
}
