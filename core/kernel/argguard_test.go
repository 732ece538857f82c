package kernel

import (
	"testing"

	"github.com/archmax-ai/archmax/core/spec"
)

// argWF guards host tools' non-path arguments both ways, and a built-in's declared path
// argument through `args:`.
const argWF = `
tools:
  forbid_always:
    - { tool: fetch_url, args: { url: ["https://evil.example/**", "https://api.example.com/*/../admin*"] } }
    - { tool: shell, args: { command: ["*rm -rf*"] } }
    - { tool: "*", args: { file_path: ["secrets/**"] } }
states:
  work:
    triggers:
      manual:
    tools:
      allow:
        - { tool: fetch_url, args: { url: ["https://api.example.com/v1/*"] } }
        - { tool: cloud, args: { region: ["eu-*"] } }
        - { tool: shell, args: { command: ["ls *"] } }
        - { tool: export, args: { target: ["reports/*.csv"] } }
        - read_file
`

func argPolicy(t *testing.T) *Policy {
	t.Helper()
	sp, err := spec.Load("wf", "workflow.yaml", []byte(argWF))
	if err != nil {
		t.Fatal(err)
	}
	return &Policy{Spec: sp, Surface: func(string) []string { return nil },
		// export's target is a declared path argument of the host tool: matched canonically
		ToolPaths: map[string][]spec.PathArg{"export": {{Arg: "target", Access: "write"}}}}
}

// GOV-30 with K17-1…K17-3: a non-path argument is matched on its raw text — a forbid widely
// ('*' crossing '/', dot segments resolved, any case), an allow narrowly ('*' within a
// segment, and never a value with dot segments or '\') — while declared path arguments keep
// their canonical matching.
func TestArgumentGuardsOnValuesThatAreNotPaths(t *testing.T) {
	p := argPolicy(t)
	rows := []struct {
		name, tool, arg, value string
		allow                  bool
	}{
		// forbid entries
		{"a URL forbid matches the URL (was canonicalised to https:/…)", "fetch_url", "url", "https://evil.example/steal", false},
		{"a URL forbid matches deeper paths", "fetch_url", "url", "https://evil.example/a/b/c", false},
		{"a URL forbid ignores case", "fetch_url", "url", "HTTPS://EVIL.example/x", false},
		{"a URL forbid sees through percent-encoded dot segments", "fetch_url", "url", "https://api.example.com/v1/%2e%2e/admin/users", false},
		{"a command forbid's '*' crosses '/'", "shell", "command", "rm -rf /home/x", false},
		{"a command forbid matches anywhere in the line", "shell", "command", "ls && rm -rf /", false},
		{"a forbid on a path argument of every tool keeps canonical matching", "read_file", "file_path", "scratchpad/../secrets/key.txt", false},
		{"… and a leading ./", "read_file", "file_path", "./secrets/key.txt", false},
		// allow entries
		{"an allowed URL", "fetch_url", "url", "https://api.example.com/v1/orders", true},
		{"an allow '*' does not cross '/'", "fetch_url", "url", "https://api.example.com/v1/orders/7", false},
		{"an allow never admits a dot segment", "fetch_url", "url", "https://api.example.com/v1/../admin", false},
		{"… nor a percent-encoded one", "fetch_url", "url", "https://api.example.com/v1/%2E%2E", false},
		{"… nor a '.' segment", "fetch_url", "url", "https://api.example.com/v1/.", false},
		{"… nor a backslash", "fetch_url", "url", `https://api.example.com/v1/a\..\admin`, false},
		{"a region inside the allowed family", "cloud", "region", "eu-west-1", true},
		{"a region that climbs out of it", "cloud", "region", "us-east-1/../eu-west-1", false},
		{"a region outside it", "cloud", "region", "us-east-1", false},
		{"an allowed command", "shell", "command", "ls docs", true},
		{"an allowed command cannot smuggle a forbidden one", "shell", "command", "ls ; rm -rf /", false},
		{"a host tool's declared path argument is canonicalised for its allow", "export", "target", "reports/../reports/q3.csv", true},
		{"… so it cannot climb out", "export", "target", "reports/../secrets/q3.csv", false},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			args := map[string]any{r.arg: r.value}
			uses, _ := p.PathUses(r.tool, args)
			v := Decide(p, Action{Tool: r.tool, Args: args, State: "work", Origin: OriginAgent, Paths: uses})
			if v.Allow != r.allow {
				t.Errorf("%s %s=%q: allow %v (rule %s: %s), want %v", r.tool, r.arg, r.value, v.Allow, v.RuleID, v.Reason, r.allow)
			}
		})
	}
}

func TestResolveDots(t *testing.T) {
	for in, want := range map[string]string{
		"https://h/a/../b":      "https://h/b",
		"https://h/../../b":     "https://h/b",
		"https://h/a/./b":       "https://h/a/b",
		"https://h/a/%2e%2e/b":  "https://h/b",
		"us-east-1/../eu-west":  "eu-west",
		"/a/../../b":            "/b",
		"plain text, no slash":  "plain text, no slash",
		"https://h":             "https://h",
		"a/b/c":                 "a/b/c",
		"https://h//a/../b/c.d": "https://h//b/c.d",
	} {
		if got := resolveDots(in); got != want {
			t.Errorf("resolveDots(%q) = %q, want %q", in, got, want)
		}
	}
}
