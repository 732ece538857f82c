package cases

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func rvf(f float64) *float64 { return &f }

// RV-01: JSON field names and omission of absent fields.
func TestAssertionRecordJSON(t *testing.T) {
	cases := []struct {
		rec  AssertionRecord
		want string
	}{
		{AssertionRecord{Kind: "reachedState", Status: AssertionPassed, Detail: "refuse", Step: 2},
			`{"kind":"reachedState","threshold":null,"status":"passed","detail":"refuse","step":2}`},
		{AssertionRecord{Kind: "succeeded", Status: AssertionPassed, Step: 1},
			`{"kind":"succeeded","threshold":null,"status":"passed","step":1}`},
		{AssertionRecord{Kind: RecordGrade, Threshold: rvf(0.7), Status: AssertionFailed, Score: rvf(0.5), Detail: "c: r", Step: 4},
			`{"kind":"grade.closedQA","threshold":0.7,"status":"failed","score":0.5,"detail":"c: r","step":4}`},
		{AssertionRecord{Kind: RecordGrade, Threshold: rvf(0), Status: AssertionPassed, Score: rvf(0), Detail: "c", Step: 0},
			`{"kind":"grade.closedQA","threshold":0,"status":"passed","score":0,"detail":"c","step":0}`},
	}
	for _, c := range cases {
		b, err := json.Marshal(c.rec)
		if err != nil || string(b) != c.want {
			t.Errorf("RV-01 json = %s, %v; want %s", b, err, c.want)
		}
	}
}

// ST-42: one not-executed record per un-run assertion step.
func TestNotExecutedRecord(t *testing.T) {
	r := NotExecutedRecord(4, ReplyAssertion{Includes: []string{"a", "b"}, Excludes: []string{"c"}})
	if want := (AssertionRecord{Kind: "reply", Status: AssertionNotExecuted, Step: 4}); !reflect.DeepEqual(r, want) {
		t.Errorf("ST-42 reply = %+v; want %+v", r, want)
	}
	b, _ := json.Marshal(r)
	if want := `{"kind":"reply","threshold":null,"status":"not-executed","step":4}`; string(b) != want {
		t.Errorf("ST-42 json = %s; want %s", b, want)
	}
	g := NotExecutedRecord(5, &GradeAssertion{ClosedQA: "polite", AtLeast: 0.8})
	b, _ = json.Marshal(g)
	if want := `{"kind":"grade","threshold":0.8,"status":"not-executed","step":5}`; string(b) != want {
		t.Errorf("ST-42 grade json = %s; want %s", b, want)
	}
	for _, a := range []Assertion{SucceededAssertion{}, VariablesAssertion{}, TrailAssertion{}, RanWorkflowAssertion{}} {
		r := NotExecutedRecord(1, a)
		if r.Kind != string(a.Kind()) || r.Threshold != nil || r.Score != nil || r.Detail != "" || r.Status != AssertionNotExecuted {
			t.Errorf("ST-42 %s = %+v", a.Kind(), r)
		}
	}
}

// The §14 worked example: a halt at step 2 and a death at the send.
func TestWorkedExampleAccounting(t *testing.T) {
	steps := []Step{
		SendStep{Message: "hi"},
		SucceededAssertion{},
		ReachedStateAssertion{State: "refuse"},
		TrailAssertion{TrailKind: "code", To: "lookup", Count: 0},
		ReplyAssertion{Excludes: []string{"INV-", `/\bINV\d+/i`}},
	}
	produced := []AssertionRecord{
		{Kind: "succeeded", Status: AssertionPassed, Step: 1},
		{Kind: "reachedState", Status: AssertionFailed, Detail: "refuse", Step: 2},
	}
	// Halt (ST-31): steps 3 and 4 each one not-executed record; one failure; no error.
	recs := NotExecutedRecords(steps, produced)
	want := append(append([]AssertionRecord{}, produced...),
		AssertionRecord{Kind: "trail", Status: AssertionNotExecuted, Step: 3},
		AssertionRecord{Kind: "reply", Status: AssertionNotExecuted, Step: 4})
	if !reflect.DeepEqual(recs, want) {
		t.Fatalf("ST-42 halt records = %+v; want %+v", recs, want)
	}
	if v := ReduceVerdict(recs); v.Status != CaseFailed || !reflect.DeepEqual(v.Failures, []string{"reachedState: refuse"}) {
		t.Errorf("RV-11 halt verdict = %+v", v)
	}

	// Die at the send (ST-40): steps 1–4 not-executed, failures = [error].
	recs = NotExecutedRecords(steps, nil)
	if len(recs) != 4 || recs[0].Step != 1 || recs[3].Step != 4 || recs[3].Kind != "reply" {
		t.Fatalf("ST-42 died records = %+v", recs)
	}
	if v := DiedVerdict("model call failed", recs); v.Status != CaseFailed || !reflect.DeepEqual(v.Failures, []string{"model call failed"}) {
		t.Errorf("RV-11 died verdict = %+v", v)
	}
	// A died case reports the error first, then the misses already recorded.
	if v := DiedVerdict("case 'x' timed out after 5ms (tests.caseTimeoutMs)", produced); !reflect.DeepEqual(v.Failures,
		[]string{"case 'x' timed out after 5ms (tests.caseTimeoutMs)", "reachedState: refuse"}) {
		t.Errorf("RV-11 died after a miss = %+v", v)
	}
}

// RV-11, RV-12
func TestReduceVerdict(t *testing.T) {
	if v := ReduceVerdict(nil); v.Status != CasePassed || v.Failures == nil || len(v.Failures) != 0 {
		t.Errorf("RV-11 empty = %#v", v)
	}
	recs := []AssertionRecord{
		{Kind: "succeeded", Status: AssertionPassed, Step: 1},
		{Kind: "usedNoTools", Status: AssertionFailed, Step: 2},
		{Kind: "reply.excludes", Status: AssertionFailed, Detail: "INV-", Step: 3},
		{Kind: "reply", Status: AssertionNotExecuted, Step: 4},
		{Kind: RecordGrade, Status: AssertionFailed, Threshold: rvf(0.7), Score: rvf(0.5), Detail: "polite: it was curt", Step: 5},
		{Kind: RecordGrade, Status: AssertionFailed, Threshold: rvf(1), Score: rvf(0.25), Detail: "c", Step: 6},
		{Kind: RecordGrade, Status: AssertionFailed, Threshold: rvf(0.7), Detail: "no score", Step: 7},
		{Kind: "grade", Status: AssertionNotExecuted, Threshold: rvf(0.9), Step: 8},
	}
	v := ReduceVerdict(recs)
	want := []string{
		"usedNoTools",
		"reply.excludes: INV-",
		"grade.closedQA: polite: it was curt (score 0.5 < 0.7)",
		"grade.closedQA: c (score 0.25 < 1)",
		"grade.closedQA: no score (score 0 < 0.7)",
	}
	if v.Status != CaseFailed || !reflect.DeepEqual(v.Failures, want) {
		t.Errorf("RV-11/12 = %#v; want %q", v, want)
	}
	// Not-executed records alone pass.
	if v := ReduceVerdict(recs[3:4]); v.Status != CasePassed {
		t.Errorf("RV-11 not-executed only = %+v", v)
	}
	// Shortest round-trip numbers (RV-12).
	if got := FailureEntry(AssertionRecord{Kind: RecordGrade, Threshold: rvf(1), Score: rvf(0.5), Detail: "x"}); got != "grade.closedQA: x (score 0.5 < 1)" {
		t.Errorf("RV-12 = %q", got)
	}
	if got := FailureEntry(AssertionRecord{Kind: RecordGrade, Threshold: rvf(0.7), Score: rvf(0.30000000000000004)}); got != "grade.closedQA (score 0.30000000000000004 < 0.7)" {
		t.Errorf("RV-12 round-trip = %q", got)
	}
}

// RV-30
func TestExitCodeForVerdict(t *testing.T) {
	for status, want := range map[CaseStatus]int{CasePassed: 0, CaseSkipped: 0, CaseFailed: 1} {
		if got := ExitCodeForVerdict(CaseVerdict{Status: status}); got != want {
			t.Errorf("RV-30 %s = %d; want %d", status, got, want)
		}
	}
	if v := SkippedVerdict(); v.Status != CaseSkipped || v.Failures == nil || len(v.Failures) != 0 {
		t.Errorf("CD-10 skipped verdict = %#v", v)
	}
}

// RV-20: field names, omitted optionals, lists never null, no HTML escaping.
func TestCaseResultJSON(t *testing.T) {
	r := CaseResult{
		ID: "refunds/veto", File: "workflows/w/tests/refunds/veto.test.yaml", Title: "Veto", Description: "A veto.",
		SessionID: "s-1", Verdict: CaseVerdict{Status: CaseFailed, Failures: []string{"grade.closedQA: c (score 0.5 < 0.7)"}},
		DurationMs: 12,
	}
	b, err := json.Marshal(r)
	want := `{"id":"refunds/veto","file":"workflows/w/tests/refunds/veto.test.yaml","title":"Veto","description":"A veto.",` +
		`"sessionId":"s-1","verdict":{"status":"failed","failures":["grade.closedQA: c (score 0.5 \u003c 0.7)"]},"records":[],"durationMs":12}`
	if err != nil || string(b) != want {
		t.Errorf("RV-20 json =\n%s\nwant\n%s", b, want)
	}
	// Without an HTML-escaping outer encoder the `<` stays literal.
	inner, _ := r.MarshalJSON()
	if want := `"failures":["grade.closedQA: c (score 0.5 < 0.7)"]`; !json.Valid(inner) || !strings.Contains(string(inner), want) {
		t.Errorf("RV-20 MarshalJSON = %s", inner)
	}
	skipped := CaseResult{ID: "a", File: "f", Verdict: SkippedVerdict(), SkipReason: "flaky"}
	b, _ = json.Marshal(skipped)
	if want := `{"id":"a","file":"f","verdict":{"status":"skipped","failures":[]},"records":[],"skipReason":"flaky","durationMs":0}`; string(b) != want {
		t.Errorf("RV-20 skipped json = %s; want %s", b, want)
	}
	b, _ = json.Marshal(CaseVerdict{Status: CasePassed})
	if string(b) != `{"status":"passed","failures":[]}` {
		t.Errorf("RV-10 json = %s", b)
	}
}
