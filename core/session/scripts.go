package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/archmax-ai/archmax/core/kernel"
	"github.com/archmax-ai/archmax/core/sandbox"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/workspace"
)

// Agent scripts: archmax_eval and archmax_run (spec 03 §4). Both evaluate in one REPL per
// engine call — the agent invocation of this turn (DESIGN.md §4: a Lambda keeps no memory
// between invocations, so REPL state lives for the calls of one invocation) — closed when
// the call ends. Their tools.* calls are governed against the agent's current state with
// origin "script"; no control tool is ever on their surface (AS-30).

// runScript answers one archmax_eval or archmax_run call that governance allowed: the
// script's text (AS-05), and whether it is an error result.
func (r *run) runScript(st *spec.State, callID, tool string, args map[string]any) (string, bool, error) {
	call := &sandbox.ScriptCall{Tools: r.scriptTools(st), Bridged: r.scriptBridge(), NextCallID: r.e.nextPtcID}
	set := r.sp.Settings
	call.Quotas = sandbox.Quotas{TimeoutMs: set.TimeoutMs, MaxPtcCalls: set.MaxPtcCalls,
		MaxResultChars: set.MaxResultChars, MemoryLimitBytes: set.MemoryLimitBytes}
	switch tool {
	case spec.EvalTool:
		code, ok := args["code"].(string)
		if !ok || strings.TrimSpace(code) == "" {
			return evalNoCode, true, nil
		}
		call.Source = []byte(code)
	case spec.RunTool:
		path, _ := args["file_path"].(string)
		if strings.TrimSpace(path) == "" {
			return runNoPath, true, nil
		}
		src, err := r.ws.ReadFile(r.ctx, path)
		if err != nil {
			if r.ctx.Err() != nil {
				return "", false, r.ctx.Err()
			}
			return scriptUnreadable(path), true, nil // AS-05
		}
		scriptArgs := map[string]any{}
		switch m := args["args"].(type) {
		case nil:
		case map[string]any:
			for k, v := range m {
				scriptArgs[k] = v
			}
		default:
			return runArgsNotMap, true, nil
		}
		scriptArgs["variables"] = r.vars() // AS-10: the runtime's snapshot wins
		call.File, call.Source, call.Args = strings.TrimPrefix(path, "/"), src, scriptArgs
	}
	h := &scriptHost{scriptCalls{r: r, st: st, origin: kernel.OriginScript}}
	res, err := r.repl().Run(r.ctx, call, h)
	h.mu.Lock()
	h.end()
	h.mu.Unlock()
	if err != nil {
		return "", false, fmt.Errorf("%s: %w", tool, err)
	}
	var abort *sandbox.AbortError
	if errors.As(res.Err, &abort) || r.ctx.Err() != nil {
		return "", false, r.ctx.Err() // a cancelled turn answers nothing more
	}
	return res.Text, res.Error, nil
}

// scriptTools is the surface an agent script's tools object offers: the state's surface
// without any control tool, `eval` or `task` (AS-30, AS-31).
func (r *run) scriptTools(st *spec.State) []sandbox.Tool {
	var out []sandbox.Tool
	for _, name := range r.surfaceOf(st.Slug).names {
		if spec.IsControlTool(name) || name == "eval" || name == "task" {
			continue
		}
		out = append(out, sandbox.Tool{Name: name})
	}
	return out
}

// scriptBridge is every tool an agent script's `tools` resolves beyond its state's surface
// (03 BR-02, the reference's rule for agent scripts): the built-ins, the host's tools and the
// delegation tools the workflow grants anywhere, sorted. A call to one outside the surface is
// governed as any call — refused where the state does not allow it.
func (r *run) scriptBridge() []sandbox.Tool {
	if r.bridge != nil { // its inputs (the spec, the host's tools) do not change during a call
		return r.bridge
	}
	names := map[string]bool{writeTodosTool: true}
	for _, t := range workspace.Tools() {
		names[t] = true
	}
	for t := range r.e.hostTools {
		names[t] = true
	}
	grants := r.sp.Tools.Allow
	for _, st := range r.sp.States {
		grants = append(grants[:len(grants):len(grants)], st.Tools.Allow...)
	}
	for _, e := range grants {
		if spec.IsWorkflowToolName(e.Tool) && r.e.available(e.Tool) {
			names[e.Tool] = true
		}
	}
	r.bridge = make([]sandbox.Tool, 0, len(names))
	for _, n := range slices.Sorted(maps.Keys(names)) {
		r.bridge = append(r.bridge, sandbox.Tool{Name: n})
	}
	return r.bridge
}

// repl returns the call's agent-script REPL, created on first use.
func (r *run) repl() *sandbox.REPL {
	if r.scripts == nil {
		r.scripts = sandbox.NewREPL()
	}
	return r.scripts
}

// closeScripts releases the call's REPL (AS-03: the context ends with the invocation).
func (r *run) closeScripts() {
	if r.scripts != nil {
		r.scripts.Close()
		r.scripts = nil
	}
}

// scriptHost routes an agent script's tools.* calls: governed against the agent's current
// state with origin "script", events as any call (AS-30, BR-*).
type scriptHost struct{ scriptCalls }

// Control implements sandbox.Host: an agent script has no control tools (AS-30).
func (h *scriptHost) Control(tool, _ string, _ json.RawMessage) (string, error) {
	return "", errors.New(notATool(tool))
}
