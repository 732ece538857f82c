package runner

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/cases"
	"github.com/archmax-ai/archmax/core/events"
	"github.com/archmax-ai/archmax/core/model/bedrock"
	"github.com/archmax-ai/archmax/core/model/scripted"
	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/local/conversefake"
)

// runScripted runs the suite's cases offline as `archmax test` does: each case's
// <name>.model.yaml parsed by the scripted model, served by the Converse fake and reached
// through the real Bedrock client.
func (s *suite) runScripted(strict bool) *Result {
	s.t.Helper()
	res, err := RunTests(context.Background(), Options{Workflow: "wf", Authored: s.authored, Strict: strict,
		SessionIDForCase: func(file string) string {
			return strings.ReplaceAll(strings.TrimPrefix(file, "workflows/wf/tests/"), "/", "-") + map[bool]string{true: "-strict"}[strict]
		},
		NewTarget: func(ctx context.Context, c *DiscoveredCase, script []byte) (*Target, error) {
			sc, err := scripted.Parse(ModelScriptFor(c.File), script)
			if err != nil {
				return nil, err
			}
			hs := httptest.NewServer(conversefake.New(sc))
			client, err := bedrock.New(ctx, bedrock.Config{Region: "us-east-1", Endpoint: hs.URL, AccessKeyID: "local", SecretAccessKey: "local",
				MaxAttempts: 2, MaxBackoff: time.Millisecond})
			if err != nil {
				hs.Close()
				return nil, err
			}
			eng, err := session.New(session.Config{Workflow: "wf", Authored: s.authored, Log: s.log, Files: s.files, Model: client, ModelID: "m"})
			return &Target{Engine: eng, Unused: sc.Unused, Close: func() error { hs.Close(); return nil }}, err
		}})
	must(s.t, err)
	return res
}

// toReview is the agent's first call: it moves the run to the human state review, which
// parks and makes the one reply-only handoff call.
const toReview = `agent:
  - when: { state: ask, turn: 1 }
    toolCalls:
      - name: archmax_advance
        input: { to: review, reason: Ready for a person. }
`

// spec 05, issue 16: a reply-only call — the handoff of a park, or the answer to a message
// sent to one — that the model script cannot serve is the runtime's warning (the park
// stands, 03 OQ-8); under Strict it fails the case, naming the action and the script's
// message, and the case's assertions still run. A scripted fault on that call is what the
// case asked for, so it stays a warning either way.
func TestStrictFailsAReplyOnlyCallTheScriptCannotServe(t *testing.T) {
	parkCase := head + "steps:\n  - send: hello\n  - parked: decision\n"
	s := newSuite(t, map[string]string{
		"handoff.test.yaml":  parkCase,
		"handoff.model.yaml": toReview,
		"reply.test.yaml":    head + "steps:\n  - send: hello\n  - send: any news?\n  - parked: decision\n",
		"reply.model.yaml":   toReview + "  - when: { state: review, turn: 1 }\n    text: A person will decide.\n",
		"halt.test.yaml":     head + "steps:\n  - send: hello\n  - succeeded: true\n  - parked: decision\n",
		"halt.model.yaml":    toReview,
		"fault.test.yaml":    parkCase,
		"fault.model.yaml":   toReview + "errors:\n  - { role: agent, call: 1, error: ServiceUnavailableException, times: 2 }\n",
	})
	lenient := s.runScripted(false)
	for _, id := range []string{"handoff", "reply"} {
		if r := s.result(lenient, id); r.Verdict.Status != cases.CasePassed || len(r.Warnings) != 0 {
			t.Errorf("non-strict %s: %+v", id, r)
		}
	}
	strict := s.runScripted(true)
	if strict.ExitCode != 1 {
		t.Errorf("exit code %d", strict.ExitCode)
	}
	for id, want := range map[string]string{
		"handoff": "steps[0] send: the model script could not answer the reply-only call: " +
			`scripted model: workflows/wf/tests/handoff.model.yaml: agent call 1: no entry left (state review, turn 1, last user text "hello")`,
		"reply": "steps[1] send: the model script could not answer the reply-only call: " +
			`scripted model: workflows/wf/tests/reply.model.yaml: agent call 2: no entry left (state review, turn 2, last user text "any news?")`,
	} {
		r := s.result(strict, id)
		if r.Verdict.Status != cases.CaseFailed || len(r.Verdict.Failures) != 1 || r.Verdict.Failures[0] != want || r.Error != "" {
			t.Errorf("strict %s: %+v\nwant the failure %s", id, r.Verdict, want)
		}
		if len(r.Records) != 1 || r.Records[0].Status != cases.AssertionPassed {
			t.Errorf("strict %s: the case's assertion did not run: %+v", id, r.Records)
		}
	}
	// a halted case keeps it too, after the halting miss
	if r := s.result(strict, "halt"); r.Verdict.Status != cases.CaseFailed || len(r.Verdict.Failures) != 2 ||
		!strings.HasPrefix(r.Verdict.Failures[0], "succeeded") || !strings.HasPrefix(r.Verdict.Failures[1], "steps[0] send: the model script could not answer") {
		t.Errorf("strict halt: %+v", r.Verdict)
	}
	for _, res := range []*Result{lenient, strict} {
		if r := s.result(res, "fault"); r.Verdict.Status != cases.CasePassed || len(r.Records) != 1 {
			t.Errorf("fault: %+v", r)
		}
	}
	// what stays a warning is the runtime's own event, unchanged
	for sid, want := range map[string]string{
		"handoff.test.yaml":      "no entry left (state review, turn 1",
		"fault.test.yaml-strict": "ServiceUnavailableException",
	} {
		if w := s.warnings(sid); len(w) != 1 || !strings.HasPrefix(w[0], "model: the reply-only message could not be written: ") || !strings.Contains(w[0], want) {
			t.Errorf("%s: warnings %q, want one reply-only warning with %q", sid, w, want)
		}
	}
}

// warnings are the stored warning events of a session, as "<scope>: <message>".
func (s *suite) warnings(sid string) []string {
	s.t.Helper()
	raws, _, err := session.NewSessions(s.log, s.files, nil).Events(context.Background(), sid, 0, 1000)
	must(s.t, err)
	var out []string
	for _, raw := range raws {
		var e events.Event
		must(s.t, json.Unmarshal(raw, &e))
		if e.Type == events.Warning {
			out = append(out, e.Str("scope")+": "+e.Str("message"))
		}
	}
	return out
}
