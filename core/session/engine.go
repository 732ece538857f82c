// Package session is the engine (spec 02): Send classifies a call, opens a turn, runs the
// state loop — agent states call the model with their governed tool surface, code states
// run their script in the sandbox — commits after every step through the store's
// one-writer protocol, and settles an Outcome.
package session

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/archmax-ai/archmax/core/events"
	"github.com/archmax-ai/archmax/core/hostconfig"
	"github.com/archmax-ai/archmax/core/kernel"
	"github.com/archmax-ai/archmax/core/machine"
	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/outbound"
	"github.com/archmax-ai/archmax/core/pricing"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/store"
	"github.com/archmax-ai/archmax/core/transcript"
	"github.com/archmax-ai/archmax/core/workspace"
)

// Defaults.
const (
	DefaultStepLimit = 50              // loop iterations per call (spec 02 §1.5)
	DefaultLeaseTTL  = 2 * time.Minute // writer lease; renewed by every commit
	DefaultMaxTokens = 4096
)

// Config assembles an Engine for one workflow.
type Config struct {
	Workflow string       // the workflow slug (workflows/<slug>/)
	Authored store.Files  // the authoring tree: workflows/, skills/, AGENTS.md, .platform/
	Log      store.Log    // the session log (head + items)
	Files    store.Files  // session files "<sessionId>/…" and spec snapshots "_specs/<hash>.json"
	Model    model.Client // the agent model
	ModelID  string       // default model id (ARCHMAX_MODEL) when the spec names none
	// GraderModelID is the grader role's default model (spec 03 GR-14; "" = ModelID's resolution).
	GraderModelID string
	// Events receives every lifecycle event live (nil discards); events are also persisted.
	Events events.Handler
	// EventLog writes every stored lifecycle event to a structured log, at its level, with
	// the session, turn and state (nil: none).
	EventLog *events.Log
	// Outbound publishes notifications of parks, raises and settles (and optionally of every
	// lifecycle event) after the commits that store them (outbox.go; nil: none).
	Outbound *outbound.Config
	// Seeds are assembly-level seeded variables, applied at every turn's opening (locked).
	Seeds map[string]any
	// Clock is the real clock (default time.Now); PromptClock pins the prompt's clock line.
	Clock       func() time.Time
	PromptClock *time.Time
	StepLimit   int           // default 50
	LeaseTTL    time.Duration // default 2 min
	MaxTokens   int           // default 4096
	Owner       string        // lease owner prefix (e.g. host name + pid); a unique suffix is added per call
	// Pricing prices each model call (the host file's pricing section, else the
	// ARCHMAX_PRICE_* variables): model-usage events and the session's usage carry costUsd
	// when an entry prices the call's model; nil prices nothing (tokens only).
	Pricing pricing.Table
	// Budgets are the host file's budgets (budget.go: limits per turn, per session lifetime
	// and per workflow per UTC day, in tokens and USD); nil limits nothing. Usage counts the
	// workflows' daily usage (nil: Log, when it is a store.UsageCounter; a daily budget
	// without one is refused at New).
	Budgets *hostconfig.Budgets
	Usage   store.UsageCounter
	// SystemPrompt is the host's systemPrompt layer, appended after AGENTS.md (spec 02 §14.1).
	SystemPrompt string
	// Tools are the host's own tools (checked at New: *ReservedToolNameError, *ToolPathsError).
	Tools []HostTool
	// PolicyRules are the host's governance rules, run after the declared denials (03 GOV-04).
	PolicyRules []kernel.Rule
	// Mounts are the host's mounts beside the defaults (skills/, .platform/, AGENTS.md):
	// read-only unless served writable, `Governed` ones reachable only where granted
	// (checked at New: *MountCollisionError, *AuthoringBackendExposedError).
	Mounts []workspace.Mount
	// Scheduler, when set, arranges the wake of a park with a resumeAt (DESIGN.md §5).
	Scheduler Scheduler
	// Blobs, when set, holds variable values over 16 KiB (content-addressed) so the session
	// record stays small; without it every value stays inline (fs and memory stores).
	Blobs store.Blobs
	// MaxDelegationDepth bounds how many delegations deep a sub-workflow may run (default
	// spec.DefaultSubWorkflowDepth, 3; a root session is 0, its child 1) and
	// MaxConcurrentDelegations how many children of one session run at once (default
	// spec.DefaultSubWorkflowConcurrency, 4; further dispatches queue) — spec 02 §8.3.
	MaxDelegationDepth       int
	MaxConcurrentDelegations int
	// TracerProvider, when set, traces every call: a turn span, a span per step, model,
	// tool, code state and delegation spans under it (trace.go; docs/operations.md
	// "Traces"). nil or a noop provider: no spans, nothing recorded.
	TracerProvider trace.TracerProvider
	// SessionTTL is the retention of a session counted from its last activity (RD22-8): every
	// commit of a root session sets its head's ExpiresAt to the commit's time plus SessionTTL
	// (retention.go); 0 keeps sessions until they are deleted.
	SessionTTL time.Duration
	// PromptCache is the host file's prompt.cache (promptcache.go): each key it sets wins over
	// the workflow's settings.prompt_cache and ARCHMAX_PROMPT_CACHE(_TTL); nil sets none.
	PromptCache *spec.PromptCache
}

// Engine runs sessions of one workflow. Safe for concurrent use across sessions.
type Engine struct {
	cfg       Config
	emitter   *events.Emitter
	ptcSeq    atomic.Int64
	hostTools map[string]*HostTool
	// siblings are the assembly's engines for the other workflows (delegation targets);
	// set by Engines, else created on first use over this engine's Config.
	siblings     *Engines
	siblingsOnce sync.Once
	// parsed keeps the last workflow.yaml parsed, by content hash: a warm container parses a
	// workflow once per edit, not once per call (a MachineSpec is read-only once loaded).
	parsedMu  sync.Mutex
	parsedSum [32]byte
	parsed    *spec.MachineSpec
}

// New validates cfg and returns an Engine.
func New(cfg Config) (*Engine, error) {
	if cfg.Workflow == "" || cfg.Authored == nil || cfg.Log == nil || cfg.Files == nil || cfg.Model == nil {
		return nil, errors.New("session: Config needs Workflow, Authored, Log, Files and Model")
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.StepLimit <= 0 {
		cfg.StepLimit = DefaultStepLimit
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = DefaultLeaseTTL
	}
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = DefaultMaxTokens
	}
	if cfg.Owner == "" {
		h, _ := os.Hostname()
		cfg.Owner = h + ":" + strconv.Itoa(os.Getpid())
	}
	cfg.Model = traceModel(cfg.Model, cfg.TracerProvider) // model spans (trace.go)
	hostTools, err := checkHostTools(cfg.Tools)
	if err != nil {
		return nil, err
	}
	if err := checkBudgets(cfg); err != nil {
		return nil, err
	}
	if err := checkMounts(cfg); err != nil {
		return nil, err
	}
	return &Engine{cfg: cfg, emitter: events.NewEmitter(cfg.Events, cfg.Clock), hostTools: hostTools}, nil
}

// workflowFiles is what one turn reads from the authoring tree.
type workflowFiles struct {
	spec     *spec.MachineSpec
	body     string   // WORKFLOW.md prose
	agents   string   // AGENTS.md
	platform string   // .platform/system/GRAPH_STATE.md override ("" = the shipped prompt)
	skills   []string // the skill registry: bundle slugs under skills/
}

func (e *Engine) loadWorkflow(ctx context.Context) (*workflowFiles, error) {
	slug := e.cfg.Workflow
	sp, err := e.loadSpec(ctx)
	if err != nil {
		return nil, err
	}
	wf := &workflowFiles{spec: sp}
	prose := "workflows/" + slug + "/WORKFLOW.md"
	wf.body = e.readOptional(ctx, prose)
	if spec.HasFrontmatter([]byte(wf.body)) { // V-31: a second machine makes the spec unusable
		yaml := "workflows/" + slug + "/workflow.yaml"
		return nil, &spec.WorkflowLoadError{Workflow: slug, File: yaml, Diagnostics: []spec.Diagnostic{spec.CompetingMachines(prose, yaml)}}
	}
	wf.agents = e.readOptional(ctx, kernel.AgentsFile)
	wf.platform = e.readOptional(ctx, ".platform/system/GRAPH_STATE.md")
	entries, err := e.cfg.Authored.List(ctx, kernel.SkillsMount)
	if err != nil {
		return nil, fmt.Errorf("list skills: %w", err)
	}
	for _, fi := range entries {
		if fi.Dir && spec.IsSlug(fi.Name) {
			wf.skills = append(wf.skills, fi.Name)
		}
	}
	return wf, nil
}

// loadSpec reads and parses the workflow's workflow.yaml only — what a delegation target's
// checks, its tool spec and the ancestors' denials need (not the prompt files a turn reads).
// Errors: *UnknownWorkflowError, *spec.WorkflowLoadError, store errors.
func (e *Engine) loadSpec(ctx context.Context) (*spec.MachineSpec, error) {
	slug := e.cfg.Workflow
	file := "workflows/" + slug + "/workflow.yaml"
	src, err := e.cfg.Authored.Read(ctx, file)
	if errors.Is(err, store.ErrNotFound) {
		prose := "workflows/" + slug + "/WORKFLOW.md"
		if spec.HasFrontmatter([]byte(e.readOptional(ctx, prose))) { // V-31: the removed single-file layout
			return nil, &spec.WorkflowLoadError{Workflow: slug, File: file, Diagnostics: []spec.Diagnostic{spec.SingleFileRemoved(prose, file)}}
		}
		return nil, &UnknownWorkflowError{Workflow: slug}
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", file, err)
	}
	return e.parse(slug, file, src)
}

// parse is spec.Load plus the runtime contract check (*spec.UnsupportedRuntimeContractError,
// spec 01 §2.4), memoised on the source's SHA-256 (errors are not kept).
func (e *Engine) parse(slug, file string, src []byte) (*spec.MachineSpec, error) {
	sum := sha256.Sum256(src)
	e.parsedMu.Lock()
	if e.parsed != nil && e.parsedSum == sum {
		sp := e.parsed
		e.parsedMu.Unlock()
		return sp, nil
	}
	e.parsedMu.Unlock()
	sp, err := spec.Load(slug, file, src)
	if err != nil {
		return nil, err
	}
	if err := spec.CheckRuntimeContract(slug, sp); err != nil {
		return nil, err
	}
	e.parsedMu.Lock()
	e.parsed, e.parsedSum = sp, sum
	e.parsedMu.Unlock()
	return sp, nil
}

func (e *Engine) readOptional(ctx context.Context, key string) string {
	b, err := e.cfg.Authored.Read(ctx, key)
	if err != nil {
		return ""
	}
	return string(b)
}

// Send runs one call on a session (spec 02 §1.3): on a session parked at a human state a
// reply, on one parked awaiting input a delivery (with in's trigger, default manual), else
// a new turn from the session's position (or the trigger's entry state for a new session).
// Errors (nothing further is committed after the last durable step):
// *spec.SessionStoreIdError, *EmptyMessageError, *spec.InvalidVariableNameError,
// *spec.InvalidTitleError, *InvalidTurnFileError, *spec.UnknownTriggerError,
// *spec.WorkflowLoadError, *UnknownWorkflowError, *WorkflowMismatchError,
// *SessionNotResumableError, *TurnAbortedError, *model.CallError, *BudgetExceededError (a
// new turn on a session or workflow whose lifetime or daily budget is spent),
// *BudgetPricingError, store errors.
func (e *Engine) Send(ctx context.Context, sessionID string, in SendInput) (*Outcome, error) {
	id, err := spec.CheckSessionID(sessionID)
	if err != nil {
		return nil, err
	}
	if err := refuseChild(id); err != nil {
		return nil, err
	}
	seeds := map[string]any{}
	maps.Copy(seeds, e.cfg.Seeds)
	maps.Copy(seeds, in.Variables)
	for _, k := range slices.Sorted(maps.Keys(seeds)) {
		if err := spec.CheckVariableName(k, "seeded"); err != nil {
			return nil, err
		}
	}
	for _, k := range slices.Sorted(maps.Keys(in.Files)) {
		if err := checkTurnFile(k, in.Files[k], in.Variables); err != nil {
			return nil, err
		}
	}
	if t, ok := seeds[spec.TitleVariable]; ok {
		if d := spec.TitleWriteError(t); d != "" {
			return nil, &spec.InvalidTitleError{Detail: d, Source: "seeded"}
		}
	}
	return e.withSession(ctx, id, func(r *run) (*Outcome, error) {
		r.addressed = true
		switch {
		case r.parked(ChannelDecision):
			if len(in.Files) > 0 {
				return nil, &InvalidTurnFileError{Variable: slices.Sorted(maps.Keys(in.Files))[0], Cause: "a person holds the session (it is parked at a human state); only a reply is accepted"}
			}
			if strings.TrimSpace(in.Message) != "" && (len(in.Variables) > 0 || strings.TrimSpace(in.Trigger) != "") {
				r.warn("session", replyIgnores(slices.Sorted(maps.Keys(in.Variables)), strings.TrimSpace(in.Trigger)))
			}
			return r.reply(in.Message)
		case r.parked(ChannelInput):
			if strings.TrimSpace(in.Message) == "" {
				return nil, &EmptyMessageError{SessionID: id}
			}
			trigger := in.Trigger
			if strings.TrimSpace(trigger) == "" {
				trigger = spec.ManualTrigger
			}
			return r.deliver(Delivery{Trigger: trigger, Variables: in.Variables, Message: in.Message, Files: in.Files})
		}
		r.traceDisposition(DispositionTurn)
		if strings.TrimSpace(in.Message) == "" {
			return nil, &EmptyMessageError{SessionID: id}
		}
		if err := r.refuseOverBudget(); err != nil {
			return nil, err
		}
		return r.turn(in, seeds)
	})
}

// withSession loads the workflow, takes the session's writer lease (kept alive while fn
// runs, released after), loads the session and runs fn on it as a new turn (fresh turn id).
func (e *Engine) withSession(ctx context.Context, id string, fn func(r *run) (*Outcome, error)) (*Outcome, error) {
	return e.withSessionOf(ctx, id, true, fn)
}

// withSessionOf is withSession; newTurn false keeps the stored turn (Continue).
func (e *Engine) withSessionOf(ctx context.Context, id string, newTurn bool, fn func(r *run) (*Outcome, error)) (out *Outcome, err error) {
	wf, err := e.loadWorkflow(ctx)
	if err != nil {
		return nil, err
	}
	if err := e.checkBudgetPricing(ctx, wf.spec); err != nil {
		return nil, err
	}
	owner := e.cfg.Owner + "/" + newMessageID()[1:9]
	head, err := e.cfg.Log.Acquire(ctx, id, owner, e.cfg.LeaseTTL)
	if errors.Is(err, store.ErrLeaseHeld) {
		// a live writer holds it: a call is running, whatever status it last committed — or
		// a delete is (SessionDeletingError, delete.go)
		return nil, leaseHeld(ctx, e.cfg.Log, id, id)
	}
	if err != nil {
		return nil, err
	}
	if Status(head.Status) == StatusDeleting { // a deletion began (RD22-2): no call runs on it
		_ = e.cfg.Log.Release(context.WithoutCancel(ctx), id, owner)
		return nil, &SessionDeletingError{SessionID: id}
	}
	stopKeeper := e.keepLease(ctx, id, owner)
	defer func() {
		stopKeeper()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = e.cfg.Log.Release(rctx, id, owner)
	}()
	request := ""
	if newTurn {
		request = requestTurnOf(ctx)
	}
	if g := guardOf(ctx); g != nil { // the host's authorization, on the head the lease holds
		// a repeat of a request the session applied was authorized when it opened its turn
		if err := g(accessOf(id, head)); err != nil && !appliedTurn(head.Body, request) {
			return nil, err
		}
	}
	r, err := e.newRun(ctx, id, owner, head, wf)
	if err != nil {
		return nil, err
	}
	defer r.traceTurn(newTurn)(&out, &err)
	if len(r.rec.Outbox) > 0 { // a writer died before it published: first of all, publish
		r.outboxHint = true
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.cfg.LeaseTTL)
		r.publishOutbox(pctx)
		cancel()
		r.startVersion = r.head.Version // the clear is not this call's progress
	}
	if r.rec.Workflow != e.cfg.Workflow {
		return nil, &WorkflowMismatchError{SessionID: id, Workflow: r.rec.Workflow, Requested: e.cfg.Workflow}
	}
	defer r.closeScripts()
	switch {
	case request != "":
		if out, ok, err := r.repeated(request); ok {
			return out, err
		}
		r.beginRequestTurn(request)
	case newTurn:
		r.beginTurn()
	}
	return fn(r)
}

// MessageCount is how many messages session id's transcript holds (0 for a session that
// has not run): the cursor a host reads before a call to slice what the call appended
// (spec 02 §5.4).
func (e *Engine) MessageCount(ctx context.Context, id string) (int, error) {
	n, err := messageCount(ctx, e.cfg.Log, id)
	return int(n), err
}

// checkTurnFile validates one turn file before anything is written (spec 02 §1.8).
func checkTurnFile(variable string, f TurnFile, vars map[string]any) error {
	if !spec.IsVariableName(variable) {
		return &InvalidTurnFileError{Variable: variable, Cause: "the variable name is not valid (lowercase letters, digits and underscores, starting with a letter)"}
	}
	if _, dup := vars[variable]; dup {
		return &InvalidTurnFileError{Variable: variable, Cause: "the variable is also given in variables"}
	}
	if err := workspace.ValidAttachmentName(f.Name); err != nil {
		return &InvalidTurnFileError{Variable: variable, Cause: err.Error()}
	}
	return nil
}

// keepLease renews the writer's lease every third of its TTL while a call runs, so a model
// call longer than the lease does not let another writer in (DESIGN.md §3). The returned
// func stops it and waits for it.
func (e *Engine) keepLease(ctx context.Context, id, owner string) func() {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(e.cfg.LeaseTTL / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.cfg.LeaseTTL/3)
				_, _ = e.cfg.Log.Acquire(rctx, id, owner, e.cfg.LeaseTTL) // a lost lease surfaces at the next commit
				cancel()
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// newRun loads the session's record, transcript and trail.
func (e *Engine) newRun(ctx context.Context, id, owner string, head *store.Head, wf *workflowFiles) (*run, error) {
	r := &run{e: e, ctx: ctx, id: id, owner: owner, head: head, wf: wf, sp: wf.spec, leasedAt: e.cfg.Clock(), knownBlobs: map[string]bool{},
		startVersion: head.Version}
	r.isNew = head.Version == 0
	if r.isNew {
		now := e.now()
		r.rec = &record{Workflow: e.cfg.Workflow, Variables: map[string]spec.VariableEntry{}}
		head.CreatedAt = now
		if _, child := spec.ParentSessionIDOf(id); !child { // a child takes its root's owner (childTurn)
			if r.rec.Owner = callerRef(ctx); r.rec.Owner != nil {
				head.Owner = r.rec.Owner.Key()
			}
		}
	} else {
		rec, err := decodeRecord(ctx, head.Body, e.cfg.Blobs, id, r.knownBlobs)
		if err != nil {
			return nil, fmt.Errorf("decode session record %s: %w", id, err)
		}
		r.rec = rec
		if r.rec.Variables == nil {
			r.rec.Variables = map[string]spec.VariableEntry{}
		}
		raws, err := e.cfg.Log.Messages(ctx, id, 0, head.Messages)
		if err != nil {
			return nil, err
		}
		for _, raw := range raws {
			var m transcript.Message
			if err := json.Unmarshal(raw, &m); err != nil {
				return nil, fmt.Errorf("decode message of %s: %w", id, err)
			}
			r.msgs = append(r.msgs, m)
			r.conv.Add(m)
		}
		traws, err := e.cfg.Log.TrailSteps(ctx, id, 0, head.Trail)
		if err != nil {
			return nil, err
		}
		for _, raw := range traws {
			var s transcript.TrailStep
			if err := json.Unmarshal(raw, &s); err != nil {
				return nil, fmt.Errorf("decode trail step of %s: %w", id, err)
			}
			r.trail = append(r.trail, s)
		}
	}
	r.mach = machine.New(r.sp, e.available)
	r.mach.Skills = wf.skills
	r.mach.Mounts = e.mountTable()
	for name, t := range e.hostTools {
		if t.Essential {
			r.mach.Essential = append(r.mach.Essential, name)
		}
	}
	slices.Sort(r.mach.Essential)
	r.ws = workspace.New(e.cfg.Files, id, e.workspaceMounts())
	r.ws.Hide(r.hideFromListing)
	return r, nil
}

func (e *Engine) now() string { return spec.FormatInstant(e.cfg.Clock()) }

// implemented is every tool this runtime can run: the workspace's file tools and the
// controls serviced by the engine.
var implemented = func() map[string]bool {
	m := map[string]bool{}
	for _, t := range workspace.Tools() {
		m[t] = true
	}
	for _, t := range []string{spec.AdvanceTool, spec.RaiseTool, spec.ResetTool, spec.WaitTool, spec.GetVariablesTool, spec.SetVariablesTool, spec.GetHistoryTool, writeTodosTool, spec.EvalTool, spec.RunTool} {
		m[t] = true
	}
	return m
}()

// available reports whether this runtime implements a tool: a built-in, a control, or a
// host tool (machine.Machine.Available).
func (e *Engine) available(tool string) bool {
	if slug, ok := spec.WorkflowSlugFromToolName(tool); ok {
		return spec.IsDelegationSlug(slug) // a delegation target is loaded when the tool is offered or called
	}
	return implemented[tool] || e.hostTools[tool] != nil
}

func (e *Engine) nextPtcID() string { return "ptc:" + strconv.FormatInt(e.ptcSeq.Add(1), 10) }

// Workflow is the slug of the workflow this engine runs.
func (e *Engine) Workflow() string { return e.cfg.Workflow }
