package kernel

import (
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/spec"
)

const hostWf = `
tools:
  forbid_always:
    - { tool: "*", paths: ["secrets/**"] }
states:
  review:
    triggers:
      manual:
    tools:
      allow: [fetch, issue_refund]
      forbid: [grep]
    transitions:
      - to: done
        description: finished
  done:
`

func hostPolicy(t *testing.T, vars map[string]any, rules ...HostRule) *Policy {
	t.Helper()
	sp, err := spec.Load("orders", "workflow.yaml", []byte(hostWf))
	if err != nil {
		t.Fatal(err)
	}
	p := &Policy{Spec: sp, Workflow: "orders", Variables: vars,
		Mounts:    append(DefaultMountsCopy(), Mount{Name: "reports"}),
		ToolPaths: map[string][]spec.PathArg{"fetch": {{Arg: "save_to", Access: "write"}}},
		Surface:   func(string) []string { return []string{"fetch"} }}
	for _, r := range rules {
		p.Rules = append(p.Rules, r.Rule())
	}
	return p
}

// DefaultMountsCopy is the default mount table (skills, .platform, AGENTS.md).
func DefaultMountsCopy() []Mount {
	return []Mount{{Name: "skills", ReadOnly: true}, {Name: ".platform", ReadOnly: true}, {Name: "AGENTS.md", File: true, ReadOnly: true}}
}

func hostDecide(p *Policy, state, tool string, args map[string]any, origin Origin) Verdict {
	uses, _ := p.PathUses(tool, args)
	return Decide(p, Action{Tool: tool, Args: args, State: state, Origin: origin, Paths: uses})
}

func TestHostRulesThroughTheKernel(t *testing.T) {
	noScriptRefunds := HostRule{ID: "host.no-script-refunds", Tools: []string{"issue_refund"}, Origins: []Origin{OriginScript, OriginCode},
		Reason: "Refunds are issued by the agent itself, never by a script."}
	euOnly := HostRule{ID: "host.eu-lookups", Allow: true, Tools: []string{"lookup"}, Args: []spec.ArgGuard{{Name: "region", Globs: []string{"eu-*"}}}}
	noEvil := HostRule{ID: "host.no-evil", Tools: []string{"*"}, Args: []spec.ArgGuard{{Name: "url", Globs: []string{"https://evil.example/*"}}}, Reason: "Not that host."}
	noReports := HostRule{ID: "host.reports-closed", Tools: []string{"fetch"}, Paths: []string{"reports/**"}, Reason: "Reports are read-only."}
	ticketDocs := HostRule{ID: "host.ticket-docs", Tools: []string{"fetch"}, Paths: []string{"docs/${{ticket}}/**"}, Reason: "Only the ticket's docs."}
	otherWorkflow := HostRule{ID: "host.other", Tools: []string{"fetch"}, Workflows: []string{"billing"}, Reason: "not here"}
	allowGrep := HostRule{ID: "host.grep-anywhere", Allow: true, Tools: []string{"grep", "read_file"}}
	p := hostPolicy(t, nil, otherWorkflow, noScriptRefunds, euOnly, noEvil, noReports, allowGrep)
	for _, c := range []struct {
		name, tool string
		args       map[string]any
		origin     Origin
		allow      bool
		rule       string
		reason     string
	}{
		{"a script's refund is blocked", "issue_refund", map[string]any{"order": "O-1"}, OriginScript, false, "host.no-script-refunds",
			"[workflow] BLOCKED: 'issue_refund' is refused by the host's rule 'host.no-script-refunds': Refunds are issued by the agent itself, never by a script."},
		{"a code state's too", "issue_refund", nil, OriginCode, false, "host.no-script-refunds", ""},
		{"an empty origin is a script's", "issue_refund", nil, "", false, "host.no-script-refunds", ""},
		{"the agent's refund goes to the grants", "issue_refund", nil, OriginAgent, true, RuleAllowed, ""},
		{"an allow rule admits an ungranted tool", "lookup", map[string]any{"region": "eu-west-1"}, OriginAgent, true, "host.eu-lookups", ""},
		{"narrowly: no dot segments", "lookup", map[string]any{"region": "eu-west-1/../us-east-1"}, OriginAgent, false, RuleNotAllowed, ""},
		{"narrowly: '*' stays in a segment", "lookup", map[string]any{"region": "eu-west-1/x"}, OriginAgent, false, RuleNotAllowed, ""},
		{"an absent guarded argument admits nothing", "lookup", map[string]any{}, OriginAgent, false, RuleNotAllowed, ""},
		{"widely: case and segments", "fetch", map[string]any{"url": "HTTPS://EVIL.example/a/b", "save_to": "scratchpad/x"}, OriginAgent, false, "host.no-evil", ""},
		{"widely: dot segments resolved", "fetch", map[string]any{"url": "https://good.example/../../evil.example/x", "save_to": "scratchpad/x"}, OriginAgent, true, RuleAllowed, ""},
		{"an unreadable guarded argument fires", "fetch", map[string]any{"url": map[string]any{"href": "x"}, "save_to": "scratchpad/x"}, OriginAgent, false, "host.no-evil", ""},
		{"a governed path", "fetch", map[string]any{"save_to": "reports/q3.md"}, OriginAgent, false, "host.reports-closed", "on"},
		{"another path passes", "fetch", map[string]any{"save_to": "scratchpad/q3.md", "url": "https://good.example/"}, OriginAgent, true, RuleAllowed, ""},
		{"a safety rule comes first", "fetch", map[string]any{"save_to": "skills/x/y"}, OriginAgent, false, RuleReadOnly, ""},
		{"a declared denial comes first", "read_file", map[string]any{"file_path": "secrets/k"}, OriginAgent, false, RuleForbidden, ""},
		{"an allow rule never lifts a state's forbid", "grep", map[string]any{"pattern": "x"}, OriginAgent, false, RuleForbiddenHere, ""},
		{"an allow rule with no globs admits", "read_file", map[string]any{"file_path": "notes.md"}, OriginAgent, true, "host.grep-anywhere", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := hostDecide(p, "review", c.tool, c.args, c.origin)
			if v.Allow != c.allow || v.RuleID != c.rule {
				t.Fatalf("verdict %+v, want allow=%v rule %s", v, c.allow, c.rule)
			}
			if c.reason != "" && !strings.Contains(v.Reason, c.reason) {
				t.Errorf("reason %q, want %q", v.Reason, c.reason)
			}
			if !c.allow && !v.Warn {
				t.Errorf("a block is surfaced as a tool-blocked event: %+v", v)
			}
		})
	}
	// a reference that does not resolve fires a block rule (fails closed) …
	p = hostPolicy(t, nil, ticketDocs)
	if v := hostDecide(p, "review", "fetch", map[string]any{"save_to": "scratchpad/a.md"}, OriginAgent); v.Allow || v.RuleID != "host.ticket-docs" {
		t.Errorf("an unresolved block: %+v", v)
	}
	// … and with the variable set, the ticket's own docs are the ones refused
	p = hostPolicy(t, map[string]any{"ticket": "T-2"}, ticketDocs)
	if v := hostDecide(p, "review", "fetch", map[string]any{"save_to": "docs/T-1/a.md"}, OriginAgent); !v.Allow {
		t.Errorf("another ticket's docs: %+v", v)
	}
	if v := hostDecide(p, "review", "fetch", map[string]any{"save_to": "docs/T-2/a.md"}, OriginAgent); v.Allow || v.RuleID != "host.ticket-docs" {
		t.Errorf("the ticket's docs: %+v", v)
	}
	// an allow rule whose reference does not resolve admits nothing
	p = hostPolicy(t, nil, HostRule{ID: "host.t", Allow: true, Tools: []string{"lookup"}, Args: []spec.ArgGuard{{Name: "region", Globs: []string{"${{region}}"}}}})
	if v := hostDecide(p, "review", "lookup", map[string]any{"region": "eu-west-1"}, OriginAgent); v.Allow {
		t.Errorf("an unresolved allow: %+v", v)
	}
	// states and an allow rule on paths: every path must match
	p = hostPolicy(t, nil, HostRule{ID: "host.copy-reports", Allow: true, Tools: []string{"copy_file"}, States: []string{"done"}, Paths: []string{"scratchpad/**", "archive/**"}})
	if v := hostDecide(p, "done", "copy_file", map[string]any{"source": "scratchpad/a", "destination": "archive/a"}, OriginAgent); !v.Allow || v.RuleID != "host.copy-reports" {
		t.Errorf("both paths match: %+v", v)
	}
	if v := hostDecide(p, "done", "copy_file", map[string]any{"source": "scratchpad/a", "destination": "elsewhere/a"}, OriginAgent); v.RuleID == "host.copy-reports" {
		t.Errorf("one path outside: %+v", v)
	}
	if v := hostDecide(p, "review", "copy_file", map[string]any{"source": "scratchpad/a", "destination": "archive/a"}, OriginAgent); v.RuleID == "host.copy-reports" {
		t.Errorf("another state: %+v", v)
	}
}

// No caller — the model, an agent script, a code state, a grader — reaches the host file's
// name at the workspace root, in any case and under any tool that governs paths.
func TestHostFileIsRefusedToEveryCaller(t *testing.T) {
	p := hostPolicy(t, nil)
	for _, origin := range []Origin{OriginAgent, OriginScript, OriginCode, OriginGrader} {
		for _, c := range []struct {
			tool string
			args map[string]any
		}{
			{"read_file", map[string]any{"file_path": "archmax.host.yaml"}},
			{"read_file", map[string]any{"file_path": "/Archmax.Host.YAML"}},
			{"write_file", map[string]any{"file_path": "archmax.host.yaml", "content": "tools: []"}},
			{"edit_file", map[string]any{"file_path": "./scratchpad/../archmax.host.yaml"}},
			{"ls", map[string]any{"path": "archmax.host.yaml/x"}},
			{"copy_file", map[string]any{"source": "scratchpad/a", "destination": "archmax.host.yaml"}},
			{"fetch", map[string]any{"save_to": "archmax.host.yaml"}},
		} {
			v := hostDecide(p, "review", c.tool, c.args, origin)
			if v.Allow || v.RuleID != RuleGovernancePlane || !strings.Contains(v.Reason, "addresses the host configuration ('archmax.host.yaml')") {
				t.Errorf("%s %s %v: %+v", origin, c.tool, c.args, v)
			}
		}
		// a name that only starts like it is another file
		if v := hostDecide(p, "review", "read_file", map[string]any{"file_path": "archmax.host.yaml.bak"}, origin); v.RuleID == RuleGovernancePlane {
			t.Errorf("%s: archmax.host.yaml.bak: %+v", origin, v)
		}
	}
}
