package session

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/model/bedrock"
	"github.com/archmax-ai/archmax/core/model/scripted"
	"github.com/archmax-ai/archmax/core/store/memory"
	"github.com/archmax-ai/archmax/local/conversefake"
)

// Prompt caching across a long session (docs/PERFORMANCE.md "Prompt caching across a long
// session"): a 60-step session through the engine, the Bedrock adapter and the Converse fake
// with usage estimates on (the fake's rules, not Bedrock's), every step reading a 2 KB tool
// result. Each benchmark reports the billed input — fresh input + 1.25 × cache writes + 0.1 ×
// cache reads, Claude Sonnet's rates — as a share of the uncached input (every input token
// at the input rate), with the per-call content in each placement and with caching off, and
// fails if a request carries more than model.MaxCachePoints cachePoints.

const (
	cacheBenchSteps  = 60
	cacheBenchPeriod = 6 // steps per state in the workflow benchmark
	cacheBenchModel  = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
	cacheBenchTick   = 20 * time.Second // the clock's advance per model call (the -still-clock runs: none)
	cacheBenchAsset  = "skills/access-policy/assets/result-2048.txt"
	cacheBenchAsk    = "Hi, I'm Dana from the platform team. I need badge access to the east lab, please."
)

// oneStateFlow is the single-state session: the access desk's AGENTS.md and skill, one state.
const oneStateFlow = `
title: Long read
instructions: Read what you are asked to and report on it.
skills:
  allow_always: [access-policy]
states:
  work:
    triggers:
      manual:
        description: Read the access-policy skill's assets.
    instructions: |-
      Read skills/access-policy/assets/result-2048.txt as often as you are asked to, then say what it holds.
`

// clockedModel advances the shared clock before every call (the engine's clock line and the
// fake's TTLs read it) and checks each request's cachePoints.
type clockedModel struct {
	next   model.Client
	mu     sync.Mutex
	now    time.Time
	tick   time.Duration
	maxCPs int
}

func (m *clockedModel) clock() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

func (m *clockedModel) Converse(ctx context.Context, req *model.Request) (*model.Response, error) {
	m.mu.Lock()
	m.now = m.now.Add(m.tick)
	m.maxCPs = max(m.maxCPs, countCachePoints(req))
	m.mu.Unlock()
	return m.next.Converse(ctx, req)
}

// cacheBenchScript is the scripted session: steps calls, each reading the 2 KB asset — in
// the workflow run the first sets `team`, and every period-th advances to the next of
// route — and the last answering in text.
func cacheBenchScript(steps, period int, route []string) string {
	var b strings.Builder
	b.WriteString("usage: estimate\nagent:\n")
	read := `{name: read_file, input: {file_path: ` + cacheBenchAsset + `}}`
	for i := 1; i <= steps; i++ {
		switch {
		case i == steps:
			b.WriteString("  - text: The asset holds the access desk's reference text.\n")
		case route != nil && i == 1:
			b.WriteString("  - toolCalls: [{name: archmax_set_variables, input: {variables: {team: platform}}}, " + read + "]\n")
		case route != nil && i%period == 0:
			fmt.Fprintf(&b, "  - toolCalls: [{name: archmax_advance, input: {to: %s, reason: \"step %d moves on\"}}]\n", route[(i/period-1)%len(route)], i)
		default:
			b.WriteString("  - toolCalls: [" + read + "]\n")
		}
	}
	return b.String()
}

// accessDeskCycle is the fixture's access-request workflow with transitions added so the
// run goes round its agent states — check-grants → approve → decline → clarify →
// check-grants — with their real instructions and tool surfaces; the screen still runs first.
func accessDeskCycle(b testing.TB) string {
	raw, err := os.ReadFile("../../fixtures/access-desk/workflows/access-request/workflow.yaml")
	if err != nil {
		b.Fatal(err)
	}
	s := string(raw)
	add := func(before, to string) {
		tr := "    transitions:\n      - to: " + to + "\n        description: Go on in " + to + ".\n"
		if !strings.Contains(s, before) {
			b.Fatalf("the fixture has no %q", before)
		}
		s = strings.Replace(s, before, tr+before, 1)
	}
	add("  decline:\n", "decline")
	add("  clarify:\n", "clarify")
	add("tests:\n", "check-grants")
	return s
}

// loadTree copies a directory of the repository into an authored store under prefix.
func loadTree(b testing.TB, files *memory.Files, dir, prefix string) {
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return files.Write(context.Background(), prefix+filepath.ToSlash(rel), data)
	})
	if err != nil {
		b.Fatal(err)
	}
}

type cacheFigures struct {
	fresh, reads, writes int64
	maxCPs, calls        int
}

// billedShare is the billed input as a share of the uncached input, in per cent.
func (f cacheFigures) billedShare() float64 {
	all := f.fresh + f.reads + f.writes
	return 100 * (float64(f.fresh) + 1.25*float64(f.writes) + 0.1*float64(f.reads)) / float64(all)
}

// cacheSession runs one session of steps model calls and sums the fake's usage.
func cacheSession(b testing.TB, steps int, flow string, route []string, placement string, cache bool, tick time.Duration) cacheFigures {
	ctx := context.Background()
	payload, err := os.ReadFile("testdata/tool-result-2048.txt")
	if err != nil {
		b.Fatal(err)
	}
	authored := memory.NewFiles()
	loadTree(b, authored, "../../fixtures/access-desk/skills", "skills/")
	if err := authored.Write(ctx, "AGENTS.md", mustRead(b, "../../fixtures/access-desk/AGENTS.md")); err != nil {
		b.Fatal(err)
	}
	slug := "long-read"
	if route != nil {
		slug = "access-request"
		loadTree(b, authored, "../../fixtures/access-desk/workflows/access-request", "workflows/access-request/")
	}
	for path, data := range map[string][]byte{"workflows/" + slug + "/workflow.yaml": []byte(flow), cacheBenchAsset: payload} {
		if err := authored.Write(ctx, path, data); err != nil {
			b.Fatal(err)
		}
	}
	script, err := scripted.Parse("cache-bench.model.yaml", []byte(cacheBenchScript(steps, cacheBenchPeriod, route)))
	if err != nil {
		b.Fatal(err)
	}
	cm := &clockedModel{now: time.Date(2026, 3, 20, 9, 0, 0, 0, time.UTC), tick: tick}
	fake := conversefake.New(script, conversefake.WithUsageEstimate(), conversefake.WithClock(cm.clock))
	hs := httptest.NewServer(fake)
	defer hs.Close()
	cm.next, err = bedrock.New(ctx, bedrock.Config{Region: "us-east-1", Endpoint: hs.URL, AccessKeyID: "local", SecretAccessKey: "local",
		MaxAttempts: 1, MaxBackoff: time.Millisecond, NoStreaming: true})
	if err != nil {
		b.Fatal(err)
	}
	defer func(p string) { perCallPlacement = p }(perCallPlacement)
	perCallPlacement = placement
	if !cache {
		b.Setenv("ARCHMAX_PROMPT_CACHE", "false")
	}
	e, err := New(Config{Workflow: slug, Authored: authored, Log: memory.New(), Files: memory.NewFiles(), Model: cm,
		ModelID: cacheBenchModel, StepLimit: 2 * steps, Clock: cm.clock})
	if err != nil {
		b.Fatal(err)
	}
	out, err := e.Send(ctx, "s", SendInput{Message: cacheBenchAsk})
	if err != nil || out.Kind != KindCompleted {
		b.Fatalf("send: %v %+v", err, out)
	}
	f := cacheFigures{maxCPs: cm.maxCPs}
	for _, r := range fake.Requests() {
		if r.Status != 200 {
			b.Fatalf("a call was refused: %d %s", r.Status, r.ErrorType)
		}
		f.calls++
		f.fresh += r.Usage.InputTokens
		f.reads += r.Usage.CacheReadInputTokens
		f.writes += r.Usage.CacheWriteInputTokens
	}
	if f.calls != steps {
		b.Fatalf("%d model calls, want %d", f.calls, steps)
	}
	if f.maxCPs > model.MaxCachePoints {
		b.Fatalf("a request carried %d cachePoints", f.maxCPs)
	}
	return f
}

func mustRead(b testing.TB, path string) []byte {
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	return data
}

func benchCache(b *testing.B, flow string, route []string) {
	for _, c := range []struct {
		name, placement string
		cache           bool
		tick            time.Duration
	}{
		{"end", perCallAtEnd, true, cacheBenchTick}, {"system", perCallInSystem, true, cacheBenchTick}, {"off", perCallInSystem, false, cacheBenchTick},
		{"end-still-clock", perCallAtEnd, true, 0}, {"system-still-clock", perCallInSystem, true, 0},
	} {
		b.Run(c.name, func(b *testing.B) {
			var f cacheFigures
			for range b.N {
				f = cacheSession(b, cacheBenchSteps, flow, route, c.placement, c.cache, c.tick)
			}
			b.ReportMetric(f.billedShare(), "billed-%")
			b.ReportMetric(float64(f.fresh+f.reads+f.writes), "input-tok")
			b.ReportMetric(float64(f.fresh), "fresh-tok")
			b.ReportMetric(float64(f.writes), "write-tok")
			b.ReportMetric(float64(f.reads), "read-tok")
			b.ReportMetric(float64(f.maxCPs), "max-cachePoints")
		})
	}
}

// BenchmarkPromptCacheOneState: 60 steps in one state (goal: billed ≤ 20% of uncached).
func BenchmarkPromptCacheOneState(b *testing.B) { benchCache(b, oneStateFlow, nil) }

// BenchmarkPromptCacheAccessDesk: 60 steps through the access desk's agent states, a state
// change every 6 steps (aim: billed ≤ 40% of uncached).
func BenchmarkPromptCacheAccessDesk(b *testing.B) {
	benchCache(b, accessDeskCycle(b), []string{"approve", "decline", "clarify", "check-grants"})
}

// A shorter run of the workflow session as a test (no figure asserted but what the rules
// fix): every request is accepted by the fake's Bedrock rules and carries at most 4
// cachePoints, in both placements; with caching on, reads outweigh writes after the first
// state; off, nothing is read or written.
func TestPromptCacheAcrossStates(t *testing.T) {
	flow, route := accessDeskCycle(t), []string{"approve", "decline", "clarify", "check-grants"}
	for _, placement := range []string{perCallAtEnd, perCallInSystem} {
		f := cacheSession(t, 4*cacheBenchPeriod, flow, route, placement, true, cacheBenchTick)
		if f.maxCPs < 3 || f.reads <= f.writes || f.billedShare() >= 100 {
			t.Errorf("%s: %+v (%.1f%% billed)", placement, f, f.billedShare())
		}
	}
	if f := cacheSession(t, 2*cacheBenchPeriod, flow, route, perCallAtEnd, false, cacheBenchTick); f.maxCPs != 0 || f.reads+f.writes != 0 {
		t.Errorf("caching off: %+v", f)
	}
}
