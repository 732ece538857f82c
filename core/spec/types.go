package spec

import (
	"cmp"
	"slices"
	"strings"
)

// Diagnostic is one finding about a workflow definition (spec 01 §8.2). Field is the
// dotted path of the offending key ("states.review.transitions.0.to", list indices as
// plain segments, "" for a whole-document finding); Line and Column are 1-based
// positions in File (0 when not applicable). Code is a stable §8.3 identifier such as
// "schema.unknown-key" or "transition.unknown-target".
type Diagnostic struct {
	Severity string `json:"severity"` // "error" | "warning"
	Code     string `json:"code,omitempty"`
	Field    string `json:"field,omitempty"`
	Message  string `json:"message"`
	File     string `json:"file,omitempty"`
	Line     int    `json:"line,omitempty"`
	Column   int    `json:"column,omitempty"`
	Hint     string `json:"hint,omitempty"` // what to do about it (HintFor the code); filled by the validators
}

// SortDiagnostics orders diags by File, then Line and Column (an unlocated finding first in
// its file), then Code, Field and Message, keeping the given order only between findings
// equal in all six: the order a reader goes through the files in, the same on every run.
func SortDiagnostics(diags []Diagnostic) {
	slices.SortStableFunc(diags, func(a, b Diagnostic) int {
		return cmp.Or(strings.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column),
			strings.Compare(a.Code, b.Code), strings.Compare(a.Field, b.Field), strings.Compare(a.Message, b.Message))
	})
}

// Values Parse applies and checks (spec 01 §2.4–§2.6, §3.1, §4.3). Unexported so the
// package's public surface stays the parsed types.
const (
	sevError   = "error"
	sevWarning = "warning"

	typeAgent  = "agent"
	typeHuman  = "human"
	typeCode   = "code"
	typeGrader = "grader"

	defaultRuntimeVersion   = "1"
	defaultTimeoutMs        = 15000
	defaultMemoryLimitBytes = 64 << 20 // 67108864
	defaultMaxPtcCalls      = 200
	defaultMaxResultChars   = 100000
	defaultCaseTimeoutMs    = 120000
	defaultMaxConcurrency   = 1
	maxTimeoutMs            = 600000 // P-14
)

// MachineSpec is a parsed workflow.yaml after defaults (spec 01 §2.14). Build it with
// Parse or Load; the zero value is an empty spec.
type MachineSpec struct {
	Title        string
	Instructions string
	// Disabled is the fail-closed read of `disabled` (§2.12): true for any value
	// except absent, null and false — a mis-typed value disables too.
	Disabled bool
	States   []*State // declaration order (§2.3)
	Runtime  Runtime
	Settings Settings
	Tests    TestsConfig
	Tools    ToolsBlock  // Allow = tools.allow_always, Forbid = tools.forbid_always
	Skills   SkillsBlock // Allow = skills.allow_always, Forbid = skills.forbid_always
	Mounts   MountsBlock // Allow = mounts.allow_always, Forbid = mounts.forbid_always
	Metadata map[string]any

	// doc is the governing document (§9.1 steps 1–2): the document as parsed, null
	// states as {}, no defaults, every metadata block removed. Hash and SnapshotJSON
	// serialise it.
	doc *node
	// bySlug and docStates index the states by slug (Parse fills them; a spec built by hand
	// has none and is scanned): lookups stay constant-time however many states there are.
	bySlug    map[string]*State
	docStates map[string]entry
}

// Runtime is the root `runtime` block (§2.4). Version is "1" when absent; a numeric
// version is rendered as JavaScript String(n) ("2" for 2).
type Runtime struct{ Engine, Version string }

// Settings is the root `settings` block (§2.5) with the Go defaults applied.
type Settings struct {
	Model            string // "" = assembly default
	TimeoutMs        int    // ms, default 15000, at most 600000
	MemoryLimitBytes int64  // bytes, default 67108864
	// MaxPtcCalls: absent ⇒ 200; explicit null ⇒ nil (unbounded); 0 allowed.
	MaxPtcCalls    *int
	MaxResultChars int          // characters, default 100000
	PromptCache    *PromptCache // nil = not set in the spec
}

// PromptCache is settings.prompt_cache (§2.5): Enabled nil when unset, TTL "" | "5m" | "1h".
type PromptCache struct {
	Enabled *bool
	TTL     string
}

// TestsConfig is the root `tests` block (§2.6) with defaults applied.
type TestsConfig struct {
	CaseTimeoutMs  int // ms, default 120000
	MaxConcurrency int // default 1; above 1 is a document error (V-20)
	Judge          *JudgeConfig
}

// JudgeConfig is tests.judge (§2.6); Temperature and MaxTokens come from
// judge.modelOptions and are nil when unset.
type JudgeConfig struct {
	Model       string
	Temperature *float64
	MaxTokens   *int
}

// ToolsBlock is a tools grant/denial pair (§3.3.9, §2.7).
type ToolsBlock struct{ Allow, Forbid []ToolEntry }

// ToolEntry is one allow/forbid entry (§3.3.10). A bare name has only Tool set;
// Guarded is true for the object form carrying `paths` or `args`.
type ToolEntry struct {
	Tool       string
	Guarded    bool
	Paths      []string   // `paths:` globs (a single string becomes one element)
	Args       []ArgGuard // `args:` in declaration order
	Connection string
	Source     string
}

// ArgGuard is one `args:` guard: the argument name and its globs.
type ArgGuard struct {
	Name  string
	Globs []string
}

// SkillsBlock is a skills grant/denial pair of skill slugs (§3.3.11, §2.8).
type SkillsBlock struct{ Allow, Forbid []string }

// MountsBlock is a mounts grant/denial pair (§3.3.12, §2.9).
type MountsBlock struct {
	Allow  []MountGrant
	Forbid []string
}

// MountGrant names a governed mount and the access a grant gives: "" (bare name,
// reads), "read" or "read_write".
type MountGrant struct {
	Mount  string
	Access string
}

// State is one state of the machine (§3). Type defaults to "agent"; Budget fields are
// 0 when unset; Line and Column locate the state's key in the file.
type State struct {
	Slug, Type                   string
	Title, Summary, Instructions string
	Triggers                     []*Trigger // declaration order
	Transitions                  []Transition
	OnError                      string
	Requires                     []string
	Tools                        ToolsBlock
	Skills                       SkillsBlock
	Mounts                       MountsBlock
	Budget                       Budget
	Evidence, Approvers          []string
	Script, Model                string
	Metadata                     map[string]any
	Line, Column                 int
}

// Budget is a state's `budget` (§3.3.13); 0 means unset.
type Budget struct{ MaxTurns, TimeoutMs, MaxParks int }

// Transition is one declared edge (§3.4). Type is "" when absent.
type Transition struct{ To, Description, Type string }

// Trigger is one trigger declaration (§4.1) on its entry State. Session and Message
// are trimmed session paths ("" = none); MessageDisabled records `message: false`;
// Description is trimmed; Extra holds the declaration's unknown keys, preserved.
type Trigger struct {
	ID, State               string
	Session                 string
	Message                 string
	MessageDisabled         bool
	Connection, Description string
	Requires, Returns       []SignatureEntry
	Extra                   map[string]any
}

// State returns the state declared under slug, or nil.
func (s *MachineSpec) State(slug string) *State {
	if s.bySlug != nil {
		return s.bySlug[slug]
	}
	for _, st := range s.States {
		if st.Slug == slug {
			return st
		}
	}
	return nil
}

// Trigger returns the declaration of trigger id, or nil when no state declares it.
// When two states declare one id (a document error, R-03) the later declaration wins,
// as triggerBindings does (§4.1).
func (s *MachineSpec) Trigger(id string) *Trigger {
	var found *Trigger
	for _, st := range s.States {
		for _, tr := range st.Triggers {
			if tr.ID == id {
				found = tr
			}
		}
	}
	return found
}

// TriggerIDs lists the declared trigger ids in declaration order, each once.
func (s *MachineSpec) TriggerIDs() []string {
	var ids []string
	seen := map[string]bool{}
	for _, st := range s.States {
		for _, tr := range st.Triggers {
			if !seen[tr.ID] {
				seen[tr.ID] = true
				ids = append(ids, tr.ID)
			}
		}
	}
	return ids
}

// Entry is the machine's entry state (§4.3): the `manual` trigger's state, else the
// first state declaring any trigger, else the first state; "" when there is none.
func (s *MachineSpec) Entry() string {
	if tr := s.Trigger(ManualTrigger); tr != nil {
		return tr.State
	}
	for _, st := range s.States {
		if len(st.Triggers) > 0 {
			return st.Slug
		}
	}
	if len(s.States) > 0 {
		return s.States[0].Slug
	}
	return ""
}

// IsTerminal reports whether the state declares no transitions (§3.5).
func (st *State) IsTerminal() bool { return len(st.Transitions) == 0 }

// TransitionTo returns the first declared transition to the state `to`, or nil.
func (st *State) TransitionTo(to string) *Transition {
	for i := range st.Transitions {
		if st.Transitions[i].To == to {
			return &st.Transitions[i]
		}
	}
	return nil
}
