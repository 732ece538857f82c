package cases

// Records, verdicts, results and exit codes (04-cases.md §11): the AssertionRecord every
// assertion step yields (RV-01…RV-03), the not-executed accounting of a halted or died
// case (ST-42), verdict reduction and failure formatting (RV-10…RV-13), the per-file
// CaseResult (RV-20, RV-21) and the verdict's exit code (RV-30). Pure.

import (
	"bytes"
	"encoding/json"
	"reflect"

	"github.com/archmax-ai/archmax/core/spec"
)

// AssertionStatus is a record's single authoritative result (RV-01): AssertionPassed,
// AssertionFailed or AssertionNotExecuted.
type AssertionStatus string

// Assertion statuses (RV-01, the reference's AssertionStatus).
const (
	AssertionPassed      AssertionStatus = "passed"
	AssertionFailed      AssertionStatus = "failed"
	AssertionNotExecuted AssertionStatus = "not-executed"
)

// Record kinds that differ from the step key (RV-01): a `reply` step yields one record per
// token of kind RecordReplyIncludes or RecordReplyExcludes (AX-06), a `grade` step one of
// kind RecordGrade (JG-10). Every other executed record's kind is its step key, and a
// not-executed record's kind is always the step key (`reply`, `grade`; ST-42).
const (
	RecordReplyIncludes = "reply.includes"
	RecordReplyExcludes = "reply.excludes"
	RecordGrade         = "grade.closedQA"
)

// AssertionRecord is the outcome of one assertion (RV-01; the reference's
// `AssertionRecord { kind, threshold, status, score?, detail?, step }`). JSON, in this field
// order:
//
//	{"kind": "reachedState", "threshold": null, "status": "passed", "detail": "refuse", "step": 2}
//	{"kind": "grade.closedQA", "threshold": 0.7, "status": "failed", "score": 0.5,
//	 "detail": "<criterion>: <reason>", "step": 4}
//	{"kind": "reply", "threshold": null, "status": "not-executed", "step": 5}
//
// Kind is the assertion kind (see the Record* constants); Threshold is the `atLeast` of a
// grade record, executed or not, and nil — JSON null, never omitted — for every other
// kind; Score is set on executed grade records only (omitted otherwise); Detail says what
// missed (failed) or what was checked (passed) and is "" — omitted — on a not-executed
// record and on the passes that carry none (succeeded, usedNoTools, a bare parked); Step
// is the zero-based index of the assertion step in `steps`, stamped on every record the
// step yields (RV-02). An empty reply token's record also has Detail "" and so omits it
// (decision: the reference would write `"detail": ""`).
type AssertionRecord struct {
	Kind      string          `json:"kind"`
	Threshold *float64        `json:"threshold"`
	Status    AssertionStatus `json:"status"`
	Score     *float64        `json:"score,omitempty"`
	Detail    string          `json:"detail,omitempty"`
	Step      int             `json:"step"`
}

// NotExecutedRecord is the one record an assertion step that produced none reports when
// its case halts or dies (ST-42; the reference's notExecutedRecord): status
// AssertionNotExecuted, the step's index, the assertion's step key as Kind (`reply`, not
// `reply.includes`; `grade`, not `grade.closedQA`), Threshold = atLeast for a grade step
// and nil otherwise, no Detail and no Score. An un-run multi-token reply yields this one
// record, never one per token. A pointer to an assertion is read as its value.
func NotExecutedRecord(step int, a Assertion) AssertionRecord {
	a = derefAssertion(a)
	rec := AssertionRecord{Status: AssertionNotExecuted, Step: step}
	if a == nil {
		return rec
	}
	rec.Kind = string(a.Kind())
	if g, ok := a.(GradeAssertion); ok {
		rec.Threshold = floatPtr(g.AtLeast)
	}
	return rec
}

// NotExecutedRecords completes the records of a case that halted or died (ST-42, RV-03):
// it returns produced followed by one NotExecutedRecord for every assertion step in
// steps whose index no produced record carries, in step order. Action steps never yield
// records. Since a case stops at its first unfinished step, the result stays in step
// order when produced is.
func NotExecutedRecords(steps []Step, produced []AssertionRecord) []AssertionRecord {
	done := make(map[int]bool, len(produced))
	for _, r := range produced {
		done[r.Step] = true
	}
	out := append([]AssertionRecord(nil), produced...)
	for i, s := range steps {
		a, ok := s.(Assertion)
		if !ok || done[i] {
			continue
		}
		out = append(out, NotExecutedRecord(i, a))
	}
	return out
}

// derefAssertion reads a pointer to an assertion as its value (the parser produces values,
// Step's doc); nil and a nil pointer give nil.
func derefAssertion(a Assertion) Assertion {
	if a == nil {
		return nil
	}
	rv := reflect.ValueOf(a)
	if rv.Kind() != reflect.Pointer {
		return a
	}
	if rv.IsNil() {
		return nil
	}
	if v, ok := rv.Elem().Interface().(Assertion); ok {
		return v
	}
	return a
}

func floatPtr(f float64) *float64 { return &f }

// CaseStatus is a case verdict's status (RV-10): CasePassed, CaseFailed or CaseSkipped.
type CaseStatus string

// Case statuses (RV-10).
const (
	CasePassed  CaseStatus = "passed"
	CaseFailed  CaseStatus = "failed"
	CaseSkipped CaseStatus = "skipped"
)

// CaseVerdict is a case's verdict (RV-10): `{"status": "failed", "failures": ["…"]}`.
// Failures is empty for a passed or skipped case and is always written as a JSON list
// (never null).
type CaseVerdict struct {
	Status   CaseStatus `json:"status"`
	Failures []string   `json:"failures"`
}

// MarshalJSON writes the verdict with `failures` as a list even when nil.
func (v CaseVerdict) MarshalJSON() ([]byte, error) {
	type plain CaseVerdict
	if v.Failures == nil {
		v.Failures = []string{}
	}
	return marshalNoHTMLEscape(plain(v))
}

// ReduceVerdict reduces a case's records to its verdict (RV-11; the reference's
// reduceVerdict, one argument, no severity tier): if any record failed, CaseFailed with
// one FailureEntry per failed record, in record order; otherwise CasePassed with no
// failures. Not-executed records contribute nothing. Skipped and died verdicts are built
// with SkippedVerdict and DiedVerdict.
func ReduceVerdict(records []AssertionRecord) CaseVerdict {
	var failures []string
	for _, r := range records {
		if r.Status == AssertionFailed {
			failures = append(failures, FailureEntry(r))
		}
	}
	if len(failures) == 0 {
		return CaseVerdict{Status: CasePassed, Failures: []string{}}
	}
	return CaseVerdict{Status: CaseFailed, Failures: failures}
}

// SkippedVerdict is a skipped case's verdict (CD-10, RV-11): `{ status: "skipped",
// failures: [] }`.
func SkippedVerdict() CaseVerdict {
	return CaseVerdict{Status: CaseSkipped, Failures: []string{}}
}

// DiedVerdict is the verdict of a case that died with message (ST-40, RV-11, REF
// runner.ts): CaseFailed with failures = [message] followed by the entries ReduceVerdict
// yields for the records already produced (not-executed records add none). The same shape
// serves an unparseable case, which has no records (RV-21).
func DiedVerdict(message string, records []AssertionRecord) CaseVerdict {
	failures := append([]string{message}, ReduceVerdict(records).Failures...)
	return CaseVerdict{Status: CaseFailed, Failures: failures}
}

// FailureEntry formats one failed record for CaseVerdict.Failures (RV-12, exact; REF
// runner.ts): `<kind>: <detail>`, or `<kind>` when the record has no detail; a record
// with a threshold (a grade record) appends ` (score <score> < <threshold>)`, its score
// read as 0 when absent. Numbers print in their shortest round-trip form, as JavaScript
// prints them (0.5, 1, 0.7). Example:
// `grade.closedQA: tells the customer the refund is denied: it did not (score 0.5 < 0.7)`.
func FailureEntry(r AssertionRecord) string {
	label := r.Kind
	if r.Detail != "" {
		label += ": " + r.Detail
	}
	if r.Threshold != nil {
		score := 0.0
		if r.Score != nil {
			score = *r.Score
		}
		label += " (score " + spec.FormatJSNumber(score) + " < " + spec.FormatJSNumber(*r.Threshold) + ")"
	}
	return label
}

// ExitCodeForVerdict maps a verdict to a process exit code (RV-30): CaseFailed → 1,
// CasePassed and CaseSkipped → 0.
func ExitCodeForVerdict(v CaseVerdict) int {
	if v.Status == CaseFailed {
		return 1
	}
	return 0
}

// CaseResult is the result of one case file (RV-20; the reference's CaseResult plus the
// Go extras File and DurationMs, a decision). JSON:
//
//	{"id": "refunds/veto", "file": "workflows/w/tests/refunds/veto.test.yaml",
//	 "title": "…", "description": "…", "sessionId": "…",
//	 "verdict": {"status": "failed", "failures": ["…"]}, "records": […],
//	 "skipReason": "…", "error": "…", "durationMs": 1234}
//
// ID is the case id (CE-10) or, for an unparseable file, its workspace-relative path;
// File the case file's workspace-relative path; Title and Description the collapsed prose
// when the file parsed (omitted otherwise); SessionID the session the case ran on
// (omitted for a skipped or unparseable case); Records always a list (never null);
// SkipReason set on skipped cases only; Error the terminating message of a died or
// unparseable case (empty — omitted — on a halt, ST-31); DurationMs the case's wall-clock
// time in milliseconds.
type CaseResult struct {
	ID          string            `json:"id"`
	File        string            `json:"file"`
	Title       string            `json:"title,omitempty"`
	Description string            `json:"description,omitempty"`
	SessionID   string            `json:"sessionId,omitempty"`
	Verdict     CaseVerdict       `json:"verdict"`
	Records     []AssertionRecord `json:"records"`
	SkipReason  string            `json:"skipReason,omitempty"`
	Error       string            `json:"error,omitempty"`
	DurationMs  int64             `json:"durationMs"`
	// Warnings are the runner's notes on a case that did not fail it, e.g. scripted-model
	// entries no call used (spec 05; an error under --strict). A Go extra.
	Warnings []string `json:"warnings,omitempty"`
}

// MarshalJSON writes the result with `records` as a list even when nil.
func (r CaseResult) MarshalJSON() ([]byte, error) {
	type plain CaseResult
	if r.Records == nil {
		r.Records = []AssertionRecord{}
	}
	return marshalNoHTMLEscape(plain(r))
}

// marshalNoHTMLEscape is json.Marshal without HTML escaping (a failure entry's `<` stays
// `<`); an enclosing encoder still applies its own escaping setting.
func marshalNoHTMLEscape(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
