package machine

import (
	"slices"
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/spec"
)

const mountsWF = `
skills:
  allow_always: [ledger, ghost]
  forbid_always: [banned]
mounts:
  allow_always: [contracts, { mount: ledgers, access: read }, shared, reference, vault]
  forbid_always: [legacy, vault]
states:
  a:
    triggers:
      manual:
    skills:
      allow: [payroll, ledger, banned]
      forbid: [ledger]
    mounts:
      allow:
        - { mount: catalogs/eu, access: read_write }
        - { mount: ledgers, access: read_write }
        - { mount: reference, access: read_write }
        - contracts
        - unknown
      forbid: [archive, contracts, legacy]
    transitions:
      - to: b
        description: next
  b:
    mounts:
      allow:
        - { mount: contracts, access: read_write }
        - { mount: shared, access: read }
    transitions:
      - to: c
        description: next
  c: {}
`

var hostMounts = append(slices.Clone(DefaultMounts),
	Mount{Name: "contracts", Governed: true},
	Mount{Name: "catalogs/eu", Governed: true},
	Mount{Name: "catalogs", Governed: true},
	Mount{Name: "ledgers", Governed: true},
	Mount{Name: "reference", Governed: true, ReadOnly: true},
	Mount{Name: "vault", Governed: true},
	Mount{Name: "shared"},
	Mount{Name: "archive"},
	Mount{Name: "legacy"},
	Mount{Name: "policy.md", File: true},
)

func mountsMachine(t *testing.T) *Machine {
	t.Helper()
	sp, err := spec.Load("wf", "workflow.yaml", []byte(mountsWF))
	if err != nil {
		t.Fatal(err)
	}
	m := New(sp, func(string) bool { return true })
	m.Mounts = hostMounts
	m.Skills = []string{"ledger", "payroll", "banned", "other"}
	return m
}

// GOV-49, spec 01 §6.6: the longest mount wins; siblings and file-mount prefixes do not match.
func TestMountOf(t *testing.T) {
	cases := map[string]string{
		"catalogs/eu":          "catalogs/eu",
		"catalogs/eu/2024/q1":  "catalogs/eu",
		"catalogs/uk/x":        "catalogs", // the parent mount, not the sibling
		"catalogs":             "catalogs",
		"catalogs-old/x":       "",
		"contracts/a.md":       "contracts",
		"AGENTS.md":            "AGENTS.md",
		"AGENTS.md.bak":        "",
		"AGENTS.md/x":          "", // a file mount has nothing below it
		"policy.md":            "policy.md",
		"skills/ledger-evil/x": "skills",
		"scratchpad/a":         "",
		"":                     "",
	}
	for path, want := range cases {
		got, ok := MountOf(hostMounts, path)
		if got.Name != want || ok != (want != "") {
			t.Errorf("MountOf(%q) = %q, %v; want %q", path, got.Name, ok, want)
		}
	}
	if _, ok := MountOf(DefaultMounts, "catalogs/eu/x"); ok {
		t.Error("the default table mounts no catalogs")
	}
}

// GOV-45, GOV-48: enabled, forbidden and workflow-forbidden mounts.
func TestMountReaders(t *testing.T) {
	m := mountsMachine(t)
	cases := []struct {
		name string
		got  []string
		want string
	}{
		// state allow first, then allow_always; ungoverned and unknown names dropped;
		// forbid at either level subtracts
		{"enabled a", m.EnabledMounts("a"), "catalogs/eu,ledgers,reference"},
		{"enabled b", m.EnabledMounts("b"), "contracts,ledgers,reference"},
		{"enabled c", m.EnabledMounts("c"), "contracts,ledgers,reference"},
		{"enabled in an unknown state reads the root", m.EnabledMounts("nope"), "contracts,ledgers,reference"},
		{"forbidden a: workflow first, each once", m.ForbiddenMounts("a"), "legacy,vault,archive,contracts"},
		{"forbidden c", m.ForbiddenMounts("c"), "legacy,vault"},
		{"workflow forbidden", m.WorkflowForbiddenMounts(), "legacy,vault"},
	}
	for _, c := range cases {
		if got := strings.Join(c.got, ","); got != c.want {
			t.Errorf("%s = %q, want %q", c.name, got, c.want)
		}
	}
	for _, c := range []struct {
		state, name          string
		denied, workflowWide bool
	}{{"a", "vault", true, true}, {"a", "archive", true, false}, {"c", "archive", false, false}, {"a", "shared", false, false}} {
		if d, w := m.MountDenial(c.state, c.name); d != c.denied || w != c.workflowWide {
			t.Errorf("MountDenial(%s, %s) = %v, %v", c.state, c.name, d, w)
		}
	}
}

// GOV-46, spec 01 §2.9: the host's read-only is a ceiling; a governed mount writes only
// with read_write; "read" at either level holds; an ungoverned mount keeps the host's posture.
func TestMountWritable(t *testing.T) {
	m := mountsMachine(t)
	cases := []struct {
		state, name string
		want        bool
	}{
		{"a", "catalogs/eu", true},  // state read_write on a writable governed mount
		{"a", "ledgers", false},     // allow_always read holds against the state's read_write
		{"a", "reference", false},   // read_write cannot lift the host's read-only
		{"a", "contracts", false},   // bare grants read
		{"b", "contracts", true},    // the state asks read_write, the root's bare grant does not narrow
		{"c", "contracts", false},   // only the root's bare grant
		{"c", "shared", true},       // ungoverned: the host's posture, a bare grant changes nothing
		{"b", "shared", false},      // ...unless a grant narrows it to read
		{"a", "archive", true},      // writability is not reachability
		{"a", "skills", false},      // the default authored mounts are read-only
		{"a", "nowhere", false},     // not in the table
		{"c", "catalogs/eu", false}, // governed, not granted here
	}
	for _, c := range cases {
		if got := m.MountWritable(c.state, c.name); got != c.want {
			t.Errorf("MountWritable(%s, %s) = %v, want %v", c.state, c.name, got, c.want)
		}
	}
}

// GOV-41, GOV-48, BR-31: listing redaction of disabled bundles and unreachable mounts.
func TestHiddenByGovernance(t *testing.T) {
	m := mountsMachine(t)
	cases := []struct {
		state, path string
		want        bool
	}{
		{"a", "skills/payroll/SKILL.md", false}, // enabled by the state
		{"a", "skills/ledger", true},            // the state forbids it
		{"a", "skills/banned/x", true},          // forbid_always
		{"a", "skills/other/x", true},           // nothing enables it
		{"b", "skills/ledger/x", false},         // allow_always
		{"b", "skills/ledger-evil/x", false},    // not a bundle of the registry
		{"a", "skills", false},                  // the mount itself lists (entries filtered one by one)
		{"a", "catalogs/eu/x", false},           // enabled, longest match
		{"a", "catalogs/uk/x", true},            // the governed parent mount is not enabled
		{"b", "catalogs/eu", true},
		{"a", "contracts/x", true},   // the state forbids it
		{"b", "contracts/x", false},  // enabled
		{"b", "vault/x", true},       // granted, but forbid_always
		{"b", "archive/x", false},    // ungoverned, forbidden only in a
		{"a", "archive/x", true},     // ...
		{"c", "legacy", true},        // ungoverned, forbid_always
		{"c", "shared/x", false},     // ungoverned
		{"c", "scratchpad/x", false}, // session space
		{"c", "", false},             // the root
	}
	for _, c := range cases {
		if got := m.HiddenByGovernance(c.state, c.path); got != c.want {
			t.Errorf("HiddenByGovernance(%s, %q) = %v, want %v", c.state, c.path, got, c.want)
		}
	}
}

// spec 01 §2.8: enabled skills and registry classification.
func TestSkillReaders(t *testing.T) {
	m := mountsMachine(t)
	if got := strings.Join(m.EnabledSkills("a"), ","); got != "payroll" {
		t.Errorf("enabled a = %q (state allow first, registry filter, forbids subtract)", got)
	}
	if got := strings.Join(m.EnabledSkills("b"), ","); got != "ledger" {
		t.Errorf("enabled b = %q", got)
	}
	for path, want := range map[string]string{"skills/ledger/scripts/x.js": "ledger", "skills/ledger": "ledger",
		"skills/ghost/x": "", "skills/": "", "skills": "", "scratchpad/skills/ledger": ""} {
		got, ok := m.SkillOf(path)
		if got != want || ok != (want != "") {
			t.Errorf("SkillOf(%q) = %q, %v; want %q", path, got, ok, want)
		}
	}
}
