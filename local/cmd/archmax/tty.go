package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/archmax-ai/archmax/core/clock"
)

// On a terminal the narration is coloured — the outcome, refusals, failures, warnings, parks
// and the states entered — unless NO_COLOR is set (any value, https://no-color.org), TERM is
// "dumb" or --no-color is given; and while one step of a call runs longer than a second a
// progress line shows the state and the seconds the step has taken, rewritten in place and
// cleared before the next line. Neither ever reaches a file or a pipe, or --json.

// isTerminal reports whether w is a terminal (tests replace it).
var isTerminal = func(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progressClock is what the progress line reads and ticks on (tests give a clock.Fake).
var progressClock = clock.Real

// noColorFlag is the persistent flag that turns colour off.
const noColorFlag = "no-color"

// colorWanted reports whether narration on w is coloured for cmd.
func colorWanted(cmd *cobra.Command, w io.Writer) bool {
	if off, err := cmd.Flags().GetBool(noColorFlag); err == nil && off {
		return false
	}
	if os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	return isTerminal(w)
}

// SGR sequences.
const (
	sgrReset   = "\x1b[0m"
	sgrBold    = "\x1b[1m"
	sgrDim     = "\x1b[2m"
	sgrRed     = "\x1b[31m"
	sgrGreen   = "\x1b[32m"
	sgrYellow  = "\x1b[33m"
	sgrMagenta = "\x1b[35m"
	sgrCyan    = "\x1b[36m"
	clearLine  = "\r\x1b[K"
)

// lineColors colours a narration line by the mark it starts with.
var lineColors = []struct{ mark, sgr string }{
	{"✔", sgrGreen}, {"✗", sgrRed}, {"⛔", sgrRed}, {"!", sgrRed}, {"⚠", sgrYellow},
	{"⏸", sgrCyan}, {"→", sgrBold}, {"⇢", sgrDim}, {"⤵", sgrMagenta}, {"⤴", sgrMagenta},
}

// paint colours each line of text (already cleaned: it holds no escape of its own).
func paint(text string) string {
	lines := strings.SplitAfter(text, "\n")
	for i, l := range lines {
		body := strings.TrimLeft(l, " ")
		if rest, ok := strings.CutPrefix(body, "~"); ok { // a sub-workflow child's line: "~1   ⚙ …"
			if n := len(rest) - len(strings.TrimLeft(rest, "0123456789")); n > 0 {
				body = strings.TrimLeft(rest[n:], " ")
			}
		}
		if body == "" || body == "\n" {
			continue
		}
		for _, c := range lineColors {
			if strings.HasPrefix(body, c.mark) {
				lead := l[:len(l)-len(body)]
				nl := ""
				if strings.HasSuffix(body, "\n") {
					body, nl = body[:len(body)-1], "\n"
				}
				lines[i] = lead + c.sgr + body + sgrReset + nl
				break
			}
		}
	}
	return strings.Join(lines, "")
}

// progress is the live line of a step that runs long: its state and when it began.
type progress struct {
	clock clock.Clock
	state string
	since time.Time
	timer clock.Timer
	shown bool
	done  bool
}

// startProgress arms r's progress line (on a terminal, not --json).
func (r *renderer) startProgress() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.prog != nil || r.json {
		return
	}
	r.prog = &progress{clock: progressClock, since: progressClock.Now()}
	r.prog.timer = r.prog.clock.AfterFunc(time.Second, r.tick)
}

// tick shows the progress line when the step has run a second or more, and re-arms.
func (r *renderer) tick() {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.prog
	if p == nil || p.done {
		return
	}
	if d := p.clock.Now().Sub(p.since); d >= time.Second && p.state != "" {
		r.flushHeader()
		line := fmt.Sprintf("… %s %ds", clean(p.state), int(d/time.Second))
		if r.color {
			line = sgrDim + line + sgrReset
		}
		fmt.Fprintf(r.flow, "%s  %s", clearLine, line)
		p.shown = true
	}
	p.timer = p.clock.AfterFunc(time.Second, r.tick)
}

// stepped marks a new step (an event): the clock restarts, and state, when set, is the
// state the line names. Called with r.mu held.
func (r *renderer) stepped(state string) {
	if p := r.prog; p != nil {
		p.since = p.clock.Now()
		if state != "" {
			p.state = state
		}
	}
}

// clearProgress removes a shown progress line before other output. Called with r.mu held.
func (r *renderer) clearProgress() {
	if p := r.prog; p != nil && p.shown {
		fmt.Fprint(r.flow, clearLine)
		p.shown = false
	}
}

// stop ends the progress line for good (the call has settled or failed).
func (r *renderer) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p := r.prog; p != nil && !p.done {
		p.done = true
		if p.timer != nil {
			p.timer.Stop()
		}
		r.clearProgress()
	}
}

// verdictPaint colours a case's verdict line (its first line: ✔ passed, ✗ failed, ○ skipped
// or needing a model) when on is set.
func verdictPaint(on bool, text string) string {
	if !on {
		return text
	}
	first, rest, _ := strings.Cut(text, "\n")
	sgr := ""
	switch {
	case strings.HasPrefix(first, "✔"):
		sgr = sgrGreen
	case strings.HasPrefix(first, "✗"):
		sgr = sgrRed
	case strings.HasPrefix(first, "○"):
		sgr = sgrYellow
	}
	if sgr == "" {
		return text
	}
	out := sgr + first + sgrReset
	if rest != "" {
		out += "\n" + rest
	}
	return out
}
