package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/local/lambdafake"
)

// sweepEvent is the sweep rule's event, which only the wake function is targeted with.
const sweepEvent = `{"version":"0","id":"e-sweep-1","detail-type":"Scheduled Event","source":"aws.events","account":"123456789012",` +
	`"time":"2026-11-30T10:05:00Z","region":"us-east-1","resources":["arn:aws:events:us-east-1:123456789012:rule/archmax-dev-sweep"],"detail":{}}`

// Only the stage's own functions are re-submitted to — the partition, region and account
// Lambda names them in, unqualified or $LATEST: a record or TARGET_ARN naming the same
// function name elsewhere, or a version or an alias, is kept and reported. The functions are
// resolved once a run. The Lambda fake is strict: it would refuse those ARNs, so a run that
// invoked them would report failures, not keeps.
func TestRedriveOnlyTheStagesOwnFunctions(t *testing.T) {
	rig := newRedriveRig(t)
	const base = "arn:aws:lambda:us-east-1:123456789012:function:"
	foreign := []string{
		"arn:aws:lambda:us-east-1:210987654321:function:archmax-dev-turn", // another account
		"arn:aws:lambda:eu-west-1:123456789012:function:archmax-dev-turn", // another region
		"arn:aws-cn:lambda:us-east-1:123456789012:function:archmax-dev-turn",
		base + "archmax-dev-turn:7",   // a version
		base + "archmax-dev-turn:old", // an alias
	}
	for _, arn := range foreign {
		rig.send(t, "turn-failed", recordOn(arn, startEvent), nil)
	}
	rig.send(t, "turn-failed", recordOn(base+"archmax-dev-turn", startEvent), nil)         // unqualified
	rig.send(t, "turn-failed", recordOn(base+"archmax-dev-turn:$LATEST", startEvent), nil) // $LATEST
	other := eventAttrs("archmax-dev-deliver")
	other["TARGET_ARN"] = "arn:aws:lambda:us-east-1:210987654321:function:archmax-dev-deliver"
	rig.send(t, "events-dlq", deliveryEvent, other)
	aliased := eventAttrs("archmax-dev-deliver")
	aliased["TARGET_ARN"] = base + "archmax-dev-deliver:live"
	rig.send(t, "events-dlq", deliveryEvent, aliased)
	elsewhere := map[string]string{}
	for k, v := range scheduleAttrs {
		elsewhere[k] = v
	}
	elsewhere["TARGET_ARN"] = "arn:aws:lambda:us-east-1:210987654321:function:archmax-dev-wake"
	rig.send(t, "schedules-dlq", wakeBody, elsewhere)

	code, out, errs := rig.redrive(t, "--json")
	recs, sum := decodeRecords(t, out)
	if code != exitFail || sum.Redriven != 2 || sum.Kept != 8 || sum.Failed != 0 {
		t.Fatalf("exit %d %+v\n%s%s", code, sum, out, errs)
	}
	for _, r := range recs {
		switch r.Action {
		case actRedriven:
			if r.Target != lambdafake.FunctionARN("archmax-dev-turn") {
				t.Errorf("re-submitted to %q", r.Target)
			}
		case actKept:
			if r.Target != "" || !strings.Contains(r.Reason, "not the stage's arn:aws:lambda:us-east-1:123456789012:function:archmax-dev-") {
				t.Errorf("kept: %+v", r)
			}
		default:
			t.Errorf("record %+v", r)
		}
	}
	if inv := rig.invoked(t); len(inv) != 1 || len(inv["archmax-dev-turn"]) != 2 {
		t.Errorf("invoked %v", inv)
	}
	if left := len(rig.queues.Messages("archmax-dev-turn-failed")); left != len(foreign) {
		t.Errorf("%d left in turn-failed, want %d", left, len(foreign))
	}
	rig.mu.Lock()
	configs := rig.configs
	rig.mu.Unlock()
	if configs != 3 { // turn, deliver, wake: once each
		t.Errorf("%d GetFunctionConfiguration calls, want 3", configs)
	}
}

// Each queue re-submits only the payloads it can carry: a sweep's Scheduled Event is the
// wake function's only (not a start on turn, from its on-failure queue or the bus's), and an
// event carrying archmaxContinue in events-dlq is no continuation (EventBridge never carries
// one).
func TestRedriveOnlyWhatEachQueueCarries(t *testing.T) {
	rig := newRedriveRig(t)
	continuing := strings.TrimSuffix(startEvent, "}") + `,"archmaxContinue":{"sessionId":"conv-9","turnId":"t-4"}}`
	sweepWithSession := strings.Replace(sweepEvent, `"detail":{}`, `"detail":{"sessionId":"conv-7"}`, 1)
	// kept
	rig.send(t, "turn-failed", record("archmax-dev-turn", sweepEvent), nil)
	rig.send(t, "deliver-failed", record("archmax-dev-deliver", sweepWithSession), nil)
	rig.send(t, "events-dlq", sweepEvent, eventAttrs("archmax-dev-turn"))
	rig.send(t, "events-dlq", continuing, eventAttrs("archmax-dev-wake"))
	rig.send(t, "events-dlq", continuing, eventAttrs("archmax-dev-turn"))
	rig.send(t, "events-dlq", startEvent, eventAttrs("archmax-dev-wake"))
	// re-submitted
	rig.send(t, "wake-failed", record("archmax-dev-wake", sweepEvent), nil)
	rig.send(t, "wake-failed", record("archmax-dev-wake", wakeBody), nil)
	rig.send(t, "events-dlq", sweepEvent, eventAttrs("archmax-dev-wake"))

	code, out, errs := rig.redrive(t, "--json")
	recs, sum := decodeRecords(t, out)
	if code != exitFail || sum.Redriven != 3 || sum.Kept != 6 {
		t.Fatalf("exit %d %+v\n%s%s", code, sum, out, errs)
	}
	got := map[string]int{}
	for _, r := range recs {
		got[r.Queue+" "+r.Kind+" "+r.Action]++
		if r.Action == actKept && !strings.Contains(r.Reason, "none of") {
			t.Errorf("kept: %+v", r)
		}
	}
	want := map[string]int{
		"archmax-dev-turn-failed unknown kept": 1, "archmax-dev-deliver-failed unknown kept": 1, "archmax-dev-events-dlq unknown kept": 4,
		"archmax-dev-wake-failed sweep redriven": 1, "archmax-dev-wake-failed wake redriven": 1, "archmax-dev-events-dlq sweep redriven": 1,
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s: %d, want %d\n%s", k, got[k], n, out)
		}
	}
	if inv := rig.invoked(t); len(inv) != 1 || len(inv["archmax-dev-wake"]) != 3 {
		t.Errorf("invoked %v", inv)
	}
}

// In the text form a value a message carries is quoted when it does not print: a session
// id with a newline and terminal escapes cannot forge a line or clear the screen.
func TestRedriveTextQuotesMessageValues(t *testing.T) {
	rig := newRedriveRig(t)
	rig.send(t, "schedules-dlq", `{"sessionId":"conv-9\n\u001b[2J\u001b[Hall 3 redriven","parkId":"park-3"}`, scheduleAttrs)
	rig.send(t, "wake-failed", record("archmax-dev-wake", `{"archmaxContinue":{"sessionId":"conv-\u202e9","turnId":"t-1"}}`), nil)
	code, out, errs := rig.redrive(t, "--dry-run")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if code != exitOK || len(lines) != 3 || strings.ContainsAny(out, "\x1b\u202e") ||
		!strings.Contains(out, `(session "conv-9\n\x1b[2J\x1b[Hall 3 redriven")`) || !strings.Contains(out, `(session "conv-\u202e9")`) {
		t.Errorf("exit %d\n%s%s", code, out, errs)
	}
	// --json escapes the control characters as JSON does
	_, out, _ = rig.redrive(t, "--dry-run", "--json")
	if strings.ContainsAny(out, "\x1b\r") || strings.Count(out, "\n") != 3 {
		t.Errorf("--json:\n%s", out)
	}
}

// Ctrl-C while a message is being re-submitted: that message is reported interrupted (the
// invocation may have reached Lambda) and left in its queue, visible; the messages not
// reached stay too; the summary is printed; no read error, no permission hint; exit 130.
func TestRedriveInterrupted(t *testing.T) {
	rig := newRedriveRig(t)
	rig.send(t, "turn-failed", record("archmax-dev-turn", startEvent), nil)
	rig.send(t, "schedules-dlq", wakeBody, scheduleAttrs)
	rig.send(t, "schedules-dlq", strings.Replace(wakeBody, "park-3", "park-4", 1), scheduleAttrs)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	invokes := 0
	rig.mu.Lock()
	rig.lambdaHook = func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodPost {
			return false
		}
		rig.mu.Lock()
		invokes++
		n := invokes
		rig.mu.Unlock()
		if n < 2 {
			return false
		}
		_, _ = io.Copy(io.Discard, r.Body)
		cancel()             // Ctrl-C while Lambda has the request
		<-r.Context().Done() // the client gave up on it
		return true
	}
	rig.mu.Unlock()

	var stdout, stderr bytes.Buffer
	code := execute(ctx, []string{"redrive", "--stage", "dev"}, &stdout, &stderr)
	if err := rig.lambda.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	out := stdout.String()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if code != exitInterrupted || len(lines) != 3 || !strings.Contains(lines[0], ": start → ") || !strings.HasSuffix(lines[0], ": redriven") ||
		!strings.Contains(lines[1], "archmax-dev-schedules-dlq ") || !strings.Contains(lines[1], ": interrupted — may have been re-submitted; left in the queue") ||
		lines[2] != "1 redriven, 0 kept, 0 failed, 1 interrupted — the run was interrupted: what it did not reach is left in the queues" {
		t.Errorf("exit %d\n%s", code, out)
	}
	if stderr.Len() != 0 {
		t.Errorf("stderr: %s", stderr.String())
	}
	if m := rig.queues.Messages("archmax-dev-schedules-dlq"); len(m) != 2 || !m[0].Visible || !m[1].Visible {
		t.Errorf("schedules-dlq after the interrupt: %+v", m)
	}
	if m := rig.queues.Messages("archmax-dev-turn-failed"); len(m) != 0 {
		t.Errorf("turn-failed after the interrupt: %+v", m)
	}
}

// Without credentials redrive says what it needs: credentials of the stage's account, and
// its permissions — not Bedrock's remedy.
func TestRedriveNoCredentialsHint(t *testing.T) {
	noAWS(t)
	t.Setenv("AWS_REGION", "us-east-1")
	code, out, errs := run(t, "redrive", "--stage", "dev")
	if code != exitFail || out != "" || !strings.Contains(errs, "no AWS credentials for SQS and Lambda") ||
		!strings.Contains(errs, "hint: no usable AWS credentials: redrive needs credentials for the account the stage is deployed in") ||
		!strings.Contains(errs, "lambda:GetFunctionConfiguration and lambda:InvokeFunction") || strings.Contains(errs, "--model-script") {
		t.Errorf("exit %d\n%s%s", code, out, errs)
	}
}
