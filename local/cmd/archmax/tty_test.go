package main

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/clock"
	"github.com/archmax-ai/archmax/core/events"
)

// onATerminal makes every writer a terminal and the progress line's clock fake for the test.
func onATerminal(t *testing.T) *clock.Fake {
	t.Helper()
	was, wasClock := isTerminal, progressClock
	fake := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	isTerminal, progressClock = func(io.Writer) bool { return true }, fake
	t.Cleanup(func() { isTerminal, progressClock = was, wasClock })
	return fake
}

// On a terminal the narration is coloured by its marks; NO_COLOR, --no-color, a pipe and
// --json have none, and the reply on stdout never has any.
func TestColourOnATerminal(t *testing.T) {
	args := func(extra ...string) []string {
		return append(append([]string{"run", "--workspace", ws, "--store", t.TempDir(), "--model-script", ws + "/model-scripts/happy.model.yaml"}, extra...),
			"access-request", "Hi, I'm Dana from the platform team. I need badge access to the east lab, please.")
	}
	onATerminal(t)
	t.Setenv("NO_COLOR", "")
	t.Setenv("TERM", "xterm-256color")
	code, out, errs := run(t, args()...)
	for _, want := range []string{sgrBold + "→ screen" + sgrReset + "\n", "  " + sgrDim + "⇢ screen → check-grants:", sgrGreen + "✔ completed in approve (turn 1)" + sgrReset + "\n"} {
		if code != exitOK || !strings.Contains(errs, want) {
			t.Errorf("coloured narration lacks %q:\n%q", want, errs)
		}
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("the reply is coloured: %q", out)
	}
	t.Setenv("NO_COLOR", "1")
	if _, _, errs := run(t, args()...); strings.Contains(errs, "\x1b") {
		t.Errorf("NO_COLOR: %q", errs)
	}
	t.Setenv("NO_COLOR", "")
	if _, _, errs := run(t, args("--no-color")...); strings.Contains(errs, "\x1b") {
		t.Errorf("--no-color: %q", errs)
	}
	if _, out, errs := run(t, args("--json")...); strings.Contains(out+errs, "\x1b") {
		t.Errorf("--json: %q %q", out, errs)
	}
	isTerminal = func(io.Writer) bool { return false }
	if _, _, errs := run(t, args()...); strings.Contains(errs, "\x1b") {
		t.Errorf("not a terminal: %q", errs)
	}
}

// syncBuffer is a buffer the progress timer and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) take() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.b.String()
	s.b.Reset()
	return out
}

// A step that runs longer than a second shows a progress line — the state and the step's
// seconds, rewritten in place each second — cleared before the next line; none after the
// call settles.
func TestProgressLineWhileAStepRuns(t *testing.T) {
	fake := onATerminal(t)
	var out, flow syncBuffer
	r := newRenderer(&out, &flow, false, false)
	r.color = true
	r.startProgress()
	r.event(events.Event{Type: events.StateEnter, Data: map[string]any{"state": "review"}})
	if got := flow.take(); got != sgrBold+"→ review"+sgrReset+"\n" {
		t.Fatalf("enter: %q", got)
	}
	fake.Advance(999 * time.Millisecond)
	if got := flow.take(); got != "" {
		t.Errorf("under a second: %q", got)
	}
	fake.Advance(time.Millisecond)
	if got := flow.take(); got != clearLine+"  "+sgrDim+"… review 1s"+sgrReset {
		t.Errorf("at a second: %q", got)
	}
	fake.Advance(time.Second)
	if got := flow.take(); got != clearLine+"  "+sgrDim+"… review 2s"+sgrReset {
		t.Errorf("at two seconds: %q", got)
	}
	r.event(events.Event{Type: events.AgentText, Data: map[string]any{"state": "review", "text": "Looking."}})
	if got := flow.take(); got != clearLine+"  💬 Looking.\n" {
		t.Errorf("next line: %q", got)
	}
	fake.Advance(500 * time.Millisecond) // the new step's clock started at the event
	if got := flow.take(); got != "" {
		t.Errorf("a new step under a second: %q", got)
	}
	r.stop()
	fake.Advance(10 * time.Second)
	if got := flow.take(); got != "" || fake.Pending() != 0 {
		t.Errorf("after stop: %q, %d timer(s)", got, fake.Pending())
	}
}

// archmax test's verdict lines are coloured on a terminal, not elsewhere.
func TestTestVerdictsColouredOnATerminal(t *testing.T) {
	onATerminal(t)
	t.Setenv("NO_COLOR", "")
	t.Setenv("TERM", "xterm")
	code, out, errs := run(t, "test", "--workspace", ws, "access-request", "happy")
	if code != exitOK || !strings.Contains(errs, sgrGreen+"✔ passed happy-path (") || strings.Contains(out, "\x1b") {
		t.Errorf("exit %d\n%q\n%q", code, out, errs)
	}
	if _, _, errs := run(t, "test", "--no-color", "--workspace", ws, "access-request", "happy"); strings.Contains(errs, "\x1b") {
		t.Errorf("--no-color: %q", errs)
	}
	if got := verdictPaint(true, "✗ failed x (1 ms, 0 tokens)\n    steps[1] …"); got != sgrRed+"✗ failed x (1 ms, 0 tokens)"+sgrReset+"\n    steps[1] …" {
		t.Errorf("failed: %q", got)
	}
}

// Marks are coloured after the indentation and a sub-workflow child's ~N; other lines stay.
func TestPaint(t *testing.T) {
	for in, want := range map[string]string{
		"→ screen\n":                    sgrBold + "→ screen" + sgrReset + "\n",
		"    ~1   ⛔ write_file refused": "    ~1   " + sgrRed + "⛔ write_file refused" + sgrReset,
		"    ~12 → verify\n":            "    ~12 " + sgrBold + "→ verify" + sgrReset + "\n",
		"  💬 hello\n":                   "  💬 hello\n",
		"  ✗ a\n  ⇢ on_error → b\n":     "  " + sgrRed + "✗ a" + sgrReset + "\n  " + sgrDim + "⇢ on_error → b" + sgrReset + "\n",
		"~x → not a child\n":            "~x → not a child\n",
	} {
		if got := paint(in); got != want {
			t.Errorf("paint(%q) = %q, want %q", in, got, want)
		}
	}
}
