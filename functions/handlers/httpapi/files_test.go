package httpapi

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/archmax-ai/archmax/core/artifacts"
	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/store"
	"github.com/archmax-ai/archmax/core/store/fs"
	"github.com/archmax-ai/archmax/core/store/memory"
)

// fsEngines is one "process" over the file store at dir: its own log and files handles (the
// flock-guarded store two processes share), the desk workflow and a queueModel.
type fsEngines struct {
	authored store.Files
	log      *fs.Store
	files    *fs.Files
	qm       *queueModel
}

func openFS(t *testing.T, dir string) *fsEngines {
	t.Helper()
	log, err := fs.Open(filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = log.Close() })
	files, err := fs.OpenFiles(filepath.Join(dir, "files"))
	if err != nil {
		t.Fatal(err)
	}
	authored := memory.NewFiles()
	if err := authored.Write(context.Background(), "workflows/desk/workflow.yaml", []byte(desk)); err != nil {
		t.Fatal(err)
	}
	return &fsEngines{authored: authored, log: log, files: files, qm: &queueModel{}}
}

func (e *fsEngines) Log() store.Log { return e.log }

func (e *fsEngines) Sessions() *session.Sessions { return session.NewSessions(e.log, e.files, nil) }

func (e *fsEngines) SessionWorkflow(ctx context.Context, id string) (string, error) {
	h, err := e.log.Get(ctx, id)
	if err != nil {
		return "", &session.SessionNotFoundError{SessionID: id}
	}
	return h.Workflow, nil
}

func (e *fsEngines) Engine(ctx context.Context, workflow string) (*session.Engine, error) {
	if _, err := e.authored.Stat(ctx, "workflows/"+workflow+"/workflow.yaml"); err != nil {
		return nil, &session.UnknownWorkflowError{Workflow: workflow}
	}
	return session.New(session.Config{Workflow: workflow, Authored: e.authored, Log: e.log, Files: e.files, Model: e.qm, ModelID: "test-model"})
}

// evidence is the file the agent attaches to its hand-over.
const evidence = "# Refund\n\nOrder 7: refund 12.50 EUR <approve?>\n"

// parkedThenDecided runs a desk session on the file store at dir in two processes: the
// first writes the evidence file and parks at sign-off with it attached, the second (its
// own store handles and engines, nothing shared in memory) decides it; it returns the
// session id and the pending park the first answered with.
func parkedThenDecided(t *testing.T, dir string) (string, map[string]any) {
	t.Helper()
	first := openFS(t, dir)
	first.qm.push(tool("write_file", map[string]any{"path": "scratchpad/refund.md", "content": evidence}),
		tool("archmax_advance", map[string]any{"to": "signoff", "reason": "ready", "evidence": []string{"scratchpad/refund.md"}}),
		*text("Sent to sign-off."))
	status, body := call(t, New(first, nil, nil, WithPolicy(testPolicy)), turn("desk", "art-1", `{"message":"refund order 7","variables":{"order":7}}`))
	if status != http.StatusOK || body["kind"] != "parked" {
		t.Fatalf("park: %d %v", status, body)
	}
	pending := body["pending"].(map[string]any)
	// the summary and the listing link the evidence too
	hf := New(first, nil, nil, WithPolicy(testPolicy))
	sum := summaryOf(t, hf, "art-1")
	_, list := call(t, hf, get("/v1/sessions", nil))
	listed := list["sessions"].([]any)[0].(map[string]any)["pending"].(map[string]any)["decision"].(map[string]any)["evidenceLinks"]
	if l := sum.Pending.Decision.EvidenceLinks; len(l) != 1 || l[0].Href != "/v1/sessions/art-1/files/scratchpad/refund.md" || listed == nil {
		t.Fatalf("summary evidenceLinks = %+v, listed %v", l, listed)
	}
	second := openFS(t, dir)
	second.qm.push(*text("Refunded."))
	status, body = call(t, New(second, nil, nil, WithPolicy(testPolicy)), decision("art-1", `{"to":"done","comment":"fine"}`))
	if status != http.StatusOK || body["kind"] != "completed" {
		t.Fatalf("decide: %d %v", status, body)
	}
	return "art-1", pending
}

// getContent sends GET path (as the $default route delivers it) signed as arn, with extra headers.
func getContent(t *testing.T, h *Handler, arn, path string, headers map[string]string) events.APIGatewayV2HTTPResponse {
	t.Helper()
	req := signedAs(get(path, nil), arn)
	for k, v := range headers {
		req.Headers[strings.ToLower(k)] = v // API Gateway lower-cases header names
	}
	resp, err := h.Handle(context.Background(), req)
	if err != nil {
		t.Fatalf("Handle returned a Go error: %v", err)
	}
	if resp.Headers["X-Content-Type-Options"] != "nosniff" || resp.Headers["Content-Security-Policy"] != "sandbox" {
		t.Errorf("GET %s → %d without the hostile-content headers: %v", path, resp.StatusCode, resp.Headers)
	}
	return resp
}

// bodyOf is a response's bytes.
func bodyOf(t *testing.T, resp events.APIGatewayV2HTTPResponse) []byte {
	t.Helper()
	if !resp.IsBase64Encoded {
		return []byte(resp.Body)
	}
	b, err := base64.StdEncoding.DecodeString(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// errCode is an error answer's error.code.
func contentCode(t *testing.T, resp events.APIGatewayV2HTTPResponse) string {
	t.Helper()
	var b ErrorBody
	if err := json.Unmarshal(bodyOf(t, resp), &b); err != nil {
		t.Fatalf("%d %s: not an error body", resp.StatusCode, resp.Body)
	}
	return b.Error.Code
}

// Spec 02 §10 over the file store: a session parked by one process and decided by another
// is read by a third, each artifact with what both wrote — the graph of its spec snapshot,
// the whole transcript in three state segments, the trail through the person's step, the
// variables with their locks, the usage and the runtime contract.
func TestArtifactsOfAParkedThenDecidedSessionAcrossProcesses(t *testing.T) {
	dir := t.TempDir()
	id, _ := parkedThenDecided(t, dir)
	reader := openFS(t, dir)
	h := New(reader, nil, nil, WithPolicy(testPolicy))
	got := map[string][]byte{}
	for _, name := range artifacts.Names {
		resp := getContent(t, h, testUserARN, "/v1/sessions/"+id+"/artifacts/"+name, nil)
		if resp.StatusCode != http.StatusOK || resp.Headers["Content-Type"] != artifacts.ContentType(name) {
			t.Fatalf("GET %s = %d %s %s", name, resp.StatusCode, resp.Headers["Content-Type"], bodyOf(t, resp))
		}
		got[name] = bodyOf(t, resp)
	}
	var graph struct {
		Nodes   []string `json:"nodes"`
		Entry   string   `json:"entry"`
		Mermaid string   `json:"mermaid"`
	}
	decodeInto(t, got[artifacts.GraphJSON], &graph)
	if strings.Join(graph.Nodes, ",") != "__start__,intake,signoff,done" || graph.Entry != "intake" || string(got[artifacts.GraphMermaid]) != graph.Mermaid+"\n" {
		t.Errorf("graph.json = %s\ngraph.mmd = %s", got[artifacts.GraphJSON], got[artifacts.GraphMermaid])
	}
	var traj artifacts.TrajectoryDoc
	decodeInto(t, got[artifacts.Trajectory], &traj)
	var states []string
	for _, s := range traj.Segments {
		states = append(states, s.State)
	}
	if traj.SessionID != id || traj.Prompt != "refund order 7" || traj.FinalAnswer != "Refunded." || strings.Join(states, ",") != "intake,signoff,done" {
		t.Errorf("trajectory = %s", got[artifacts.Trajectory])
	}
	if !strings.Contains(string(got[artifacts.Trajectory]), `"name": "write_file"`) {
		t.Errorf("trajectory lacks the write_file call: %s", got[artifacts.Trajectory])
	}
	var trail struct {
		SessionID string `json:"sessionId"`
		Steps     []struct {
			To   string `json:"to"`
			Kind string `json:"kind"`
		} `json:"steps"`
	}
	decodeInto(t, got[artifacts.Trail], &trail)
	var kinds []string
	for _, s := range trail.Steps {
		kinds = append(kinds, s.Kind+":"+s.To)
	}
	if trail.SessionID != id || strings.Join(kinds, " ") != "trigger:intake agent:signoff human:done" {
		t.Errorf("trail.json = %s", got[artifacts.Trail])
	}
	var vars struct {
		Variables map[string]spec.VariableEntry `json:"variables"`
	}
	decodeInto(t, got[artifacts.Variables], &vars)
	if v := vars.Variables["order"]; v.Value != 7.0 || !v.Locked {
		t.Errorf("variables.json = %s", got[artifacts.Variables])
	}
	var meta struct {
		RuntimeContract string           `json:"runtimeContract"`
		PackageVersion  string           `json:"packageVersion"`
		SpecHash        string           `json:"specHash"`
		Usage           *artifacts.Usage `json:"usage"`
		Extra           map[string]any   `json:"-"`
	}
	decodeInto(t, got[artifacts.Metadata], &meta)
	sum := summaryOf(t, h, id)
	if meta.RuntimeContract != "archmax-harness@1" || meta.PackageVersion == "" || meta.SpecHash != sum.SpecHash || meta.SpecHash == "" ||
		meta.Usage == nil || meta.Usage.InputTokens != sum.Usage.InputTokens || meta.Usage.CostUSD != nil {
		t.Errorf("metadata.json = %s (summary usage %+v)", got[artifacts.Metadata], sum.Usage)
	}
	// rendered on read: the same bytes from the store, whichever process reads
	again := New(openFS(t, dir), nil, nil, WithPolicy(testPolicy))
	for _, name := range artifacts.Names {
		if b := bodyOf(t, getContent(t, again, testUserARN, "/v1/sessions/"+id+"/artifacts/"+name, nil)); string(b) != string(got[name]) {
			t.Errorf("%s differs between two readers", name)
		}
	}
	// an unknown name, another principal's session, a missing session: 404
	if resp := getContent(t, h, testUserARN, "/v1/sessions/"+id+"/artifacts/checkpoint.json", nil); resp.StatusCode != http.StatusNotFound || contentCode(t, resp) != CodeArtifactNotFound {
		t.Errorf("an unknown artifact = %d %s", resp.StatusCode, resp.Body)
	}
	if resp := getContent(t, h, eveARN, "/v1/sessions/"+id+"/artifacts/trail.json", nil); resp.StatusCode != http.StatusNotFound || contentCode(t, resp) != "SessionNotFoundError" {
		t.Errorf("another principal's artifact = %d %s", resp.StatusCode, resp.Body)
	}
	if resp := getContent(t, h, testUserARN, "/v1/sessions/nobody/artifacts/trail.json", nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("a missing session's artifact = %d", resp.StatusCode)
	}
	// through the route key, as API Gateway delivers it
	req := signedAs(get("/v1/sessions/"+id+"/artifacts/graph.mmd", nil), testUserARN)
	req.RouteKey, req.PathParameters = RouteArtifact, map[string]string{"sessionId": id, "name": "graph.mmd"}
	if resp, _ := h.HandleRead(context.Background(), req); resp.StatusCode != http.StatusOK || string(bodyOf(t, resp)) != string(got[artifacts.GraphMermaid]) {
		t.Errorf("the artifact route by route key = %d %s", resp.StatusCode, resp.Body)
	}
}

func decodeInto(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%v: %s", err, data)
	}
}

// A park's evidence links to the file route, and the file route serves it read-only: the
// bytes as written, its type by extension, the hostile-content headers; ranges; the
// refusals of traversal, internal areas, the transcript's pages, another session's files
// and another principal.
func TestEvidenceFilesAreServedReadOnly(t *testing.T) {
	dir := t.TempDir()
	id, pending := parkedThenDecided(t, dir)
	links := pending["decision"].(map[string]any)["evidenceLinks"].([]any)
	link := links[0].(map[string]any)
	if link["path"] != "scratchpad/refund.md" || link["href"] != "/v1/sessions/"+id+"/files/scratchpad/refund.md" {
		t.Fatalf("evidenceLinks = %v", links)
	}
	e := openFS(t, dir)
	h := New(e, nil, nil, WithPolicy(testPolicy))
	ctx := context.Background()
	resp := getContent(t, h, testUserARN, link["href"].(string), nil)
	if resp.StatusCode != http.StatusOK || string(bodyOf(t, resp)) != evidence || resp.Headers["Content-Type"] != "text/markdown; charset=utf-8" ||
		resp.Headers["Accept-Ranges"] != "bytes" || resp.Headers["ETag"] == "" || !strings.HasPrefix(resp.Headers["Content-Disposition"], "inline") {
		t.Fatalf("GET the evidence = %d %v %q", resp.StatusCode, resp.Headers, bodyOf(t, resp))
	}
	// also through the route key with the greedy {path+}
	req := signedAs(get(link["href"].(string), nil), testUserARN)
	req.RouteKey, req.PathParameters = RouteFile, map[string]string{"sessionId": id, "path": "scratchpad/refund.md"}
	if r, _ := h.HandleRead(ctx, req); r.StatusCode != http.StatusOK || string(bodyOf(t, r)) != evidence {
		t.Errorf("the file route by route key = %d %s", r.StatusCode, r.Body)
	}

	// hostile types: the source as text, never rendered; unknown and PDF as attachments
	seed := map[string]string{
		"scratchpad/page.html": "<script>alert(1)</script>", "scratchpad/pic.svg": `<svg onload="alert(1)"/>`,
		"scratchpad/feed.xml": "<x/>", "scratchpad/app.js": "alert(1)", "scratchpad/blob.bin": "\x00\x01",
		"scratchpad/report.pdf": "%PDF-1.4", "scratchpad/data.json": `{"a":1}`, "scratchpad/pic.png": "\x89PNG",
		"checkpoints/c.json": "{}", "artifacts/graph.json": "{}", "_specs/x.json": "{}", "conversation_history/1.md": "hi",
		"workflows/desk/workflow.yaml": "x", "archmax.host.yaml": "x",
	}
	for p, v := range seed {
		if err := e.files.Write(ctx, id+"/"+p, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.files.Write(ctx, "other/scratchpad/secret.md", []byte("not yours")); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string][2]string{
		"page.html": {"text/plain; charset=utf-8", "inline"}, "pic.svg": {"text/plain; charset=utf-8", "inline"},
		"feed.xml": {"text/plain; charset=utf-8", "inline"}, "app.js": {"text/plain; charset=utf-8", "inline"},
		"blob.bin": {"application/octet-stream", "attachment"}, "report.pdf": {"application/pdf", "attachment"},
		"data.json": {"application/json", "inline"}, "pic.png": {"image/png", "inline"},
	} {
		r := getContent(t, h, testUserARN, "/v1/sessions/"+id+"/files/scratchpad/"+p, nil)
		if r.StatusCode != http.StatusOK || r.Headers["Content-Type"] != want[0] || !strings.HasPrefix(r.Headers["Content-Disposition"], want[1]+";") ||
			string(bodyOf(t, r)) != seed["scratchpad/"+p] {
			t.Errorf("GET %s = %d %s %s", p, r.StatusCode, r.Headers["Content-Type"], r.Headers["Content-Disposition"])
		}
	}

	// refusals
	for p, want := range map[string][2]any{
		"../other/scratchpad/secret.md":                  {http.StatusBadRequest, CodePathEscape},
		"scratchpad/../../other/x.md":                    {http.StatusBadRequest, CodePathEscape},
		"checkpoints/c.json":                             {http.StatusNotFound, CodeFileNotFound},
		"Artifacts/graph.json":                           {http.StatusNotFound, CodeFileNotFound},
		"artifacts/graph.json":                           {http.StatusNotFound, CodeFileNotFound},
		"_specs/x.json":                                  {http.StatusNotFound, CodeFileNotFound},
		"scratchpad/../checkpoints/c.json":               {http.StatusNotFound, CodeFileNotFound},
		"conversation_history/1.md":                      {http.StatusNotFound, CodeFileNotFound},
		"workflows/desk/workflow.yaml":                   {http.StatusNotFound, CodeFileNotFound},
		"archmax.host.yaml":                              {http.StatusNotFound, CodeFileNotFound},
		"scratchpad":                                     {http.StatusNotFound, CodeFileNotFound},
		"scratchpad/none.md":                             {http.StatusNotFound, CodeFileNotFound},
		"scratchpad/a\x00b.md":                           {http.StatusNotFound, CodeFileNotFound},
		"scratchpad/" + strings.Repeat("n", 300) + ".md": {http.StatusNotFound, CodeFileNotFound},
	} {
		r := getContent(t, h, testUserARN, "/v1/sessions/"+id+"/files/"+p, nil)
		if r.StatusCode != want[0] || contentCode(t, r) != want[1] {
			t.Errorf("GET files/%s = %d %s, want %d %s", p, r.StatusCode, r.Body, want[0], want[1])
		}
	}
	// empty and '.' segments in the file's path are dropped as documented, by raw path
	// (archmax serve, a $default route) as by the greedy route key (the Lambda)
	for _, p := range []string{"scratchpad//refund.md", "scratchpad/refund.md/", "/scratchpad/refund.md", "./scratchpad/./refund.md", "scratchpad\\refund.md", "scratchpad///refund.md//"} {
		r := getContent(t, h, testUserARN, "/v1/sessions/"+id+"/files/"+p, nil)
		if r.StatusCode != http.StatusOK || string(bodyOf(t, r)) != evidence {
			t.Errorf("GET files/%s = %d %s", p, r.StatusCode, bodyOf(t, r))
		}
		req := signedAs(get("/v1/sessions/"+id+"/files/"+p, nil), testUserARN)
		req.RouteKey, req.PathParameters = RouteFile, map[string]string{"sessionId": id, "path": p}
		if r, _ := h.HandleRead(ctx, req); r.StatusCode != http.StatusOK || string(bodyOf(t, r)) != evidence {
			t.Errorf("GET files/%s by route key = %d %s", p, r.StatusCode, r.Body)
		}
	}
	for p, want := range map[string][2]any{
		"/v1/sessions/" + id + "/files//":           {http.StatusNotFound, CodeFileNotFound}, // the root: no file
		"/v1/sessions/" + id + "/files/":            {http.StatusNotFound, CodeNotFound},     // no path: no route
		"/v1/sessions/" + id + "/files":             {http.StatusNotFound, CodeNotFound},
		"/v1/sessions/" + id + "//files/a.md":       {http.StatusNotFound, CodeNotFound}, // the route's own segments stay exact
		"/v1/sessions//files/scratchpad/refund.md":  {http.StatusNotFound, CodeNotFound},
		"/v1/sessions/" + id + "/files//../other/x": {http.StatusBadRequest, CodePathEscape},
	} {
		resp, _ := h.Handle(ctx, signedAs(get(p, nil), testUserARN))
		var b ErrorBody
		_ = json.Unmarshal(bodyOf(t, resp), &b)
		if resp.StatusCode != want[0] || b.Error.Code != want[1] {
			t.Errorf("GET %s = %d %s, want %d %s", p, resp.StatusCode, bodyOf(t, resp), want[0], want[1])
		}
	}
	if r := getContent(t, h, eveARN, link["href"].(string), nil); r.StatusCode != http.StatusNotFound || contentCode(t, r) != "SessionNotFoundError" {
		t.Errorf("another principal's evidence = %d %s", r.StatusCode, r.Body)
	}
	if r := getContent(t, h, testUserARN, "/v1/sessions/other/files/scratchpad/secret.md", nil); r.StatusCode != http.StatusNotFound {
		t.Errorf("a file of a session that never ran = %d", r.StatusCode)
	}
}

// RFC 9110 §14: one byte range answers 206 with Content-Range; a suffix range; a range past
// the end 416 with bytes */size; several ranges, another unit or a stale If-Range the whole
// file; a file over the answer cap 413 without a range and in parts with one.
func TestFileRanges(t *testing.T) {
	dir := t.TempDir()
	id, _ := parkedThenDecided(t, dir)
	e := openFS(t, dir)
	h := New(e, nil, nil, WithPolicy(testPolicy))
	href := "/v1/sessions/" + id + "/files/scratchpad/refund.md"
	size := len(evidence)
	whole := getContent(t, h, testUserARN, href, nil)
	for rng, want := range map[string]struct {
		status int
		body   string
		cr     string
	}{
		"bytes=0-5":     {206, evidence[:6], fmt.Sprintf("bytes 0-5/%d", size)},
		"bytes=2-":      {206, evidence[2:], fmt.Sprintf("bytes 2-%d/%d", size-1, size)},
		"bytes=-4":      {206, evidence[size-4:], fmt.Sprintf("bytes %d-%d/%d", size-4, size-1, size)},
		"bytes=3-9999":  {206, evidence[3:], fmt.Sprintf("bytes 3-%d/%d", size-1, size)},
		"bytes=0-1,4-5": {200, evidence, ""},
		"items=0-1":     {200, evidence, ""},
		"bytes=5-1":     {200, evidence, ""},
		"bytes=9999-":   {416, "", fmt.Sprintf("bytes */%d", size)},
		"bytes=-0":      {416, "", fmt.Sprintf("bytes */%d", size)},
		// positions too long for an int64 are past any end: a last one clamped, a suffix
		// the whole, a first one unsatisfiable (RFC 9110 §14.1.2)
		"bytes=0-99999999999999999999":     {206, evidence, fmt.Sprintf("bytes 0-%d/%d", size-1, size)},
		"bytes=3-99999999999999999999":     {206, evidence[3:], fmt.Sprintf("bytes 3-%d/%d", size-1, size)},
		"bytes=-99999999999999999999":      {206, evidence, fmt.Sprintf("bytes 0-%d/%d", size-1, size)},
		"bytes=99999999999999999999-":      {416, "", fmt.Sprintf("bytes */%d", size)},
		"bytes=99999999999999999999-5":     {200, evidence, ""},
		"bytes=0-9223372036854775807":      {206, evidence, fmt.Sprintf("bytes 0-%d/%d", size-1, size)},
		"bytes=9223372036854775807-":       {416, "", fmt.Sprintf("bytes */%d", size)},
		"bytes=0-99999999999999999999,0-1": {200, evidence, ""},
	} {
		r := getContent(t, h, testUserARN, href, map[string]string{"range": rng})
		if r.StatusCode != want.status || r.Headers["Content-Range"] != want.cr {
			t.Errorf("Range %s = %d %q, want %d %q", rng, r.StatusCode, r.Headers["Content-Range"], want.status, want.cr)
			continue
		}
		if want.status == 416 {
			if contentCode(t, r) != CodeRangeNotSatisfiable {
				t.Errorf("Range %s: %s", rng, r.Body)
			}
		} else if string(bodyOf(t, r)) != want.body {
			t.Errorf("Range %s body = %q, want %q", rng, bodyOf(t, r), want.body)
		}
	}
	if r := getContent(t, h, testUserARN, href, map[string]string{"range": "bytes=0-1", "if-range": `"stale"`}); r.StatusCode != 200 {
		t.Errorf("a stale If-Range = %d, want the whole file", r.StatusCode)
	}
	if r := getContent(t, h, testUserARN, href, map[string]string{"range": "bytes=0-1", "if-range": whole.Headers["ETag"]}); r.StatusCode != 206 {
		t.Errorf("a current If-Range = %d, want the range", r.StatusCode)
	}

	big := strings.Repeat("0123456789abcdef", MaxServedBytes/16+1) // just over the answer cap
	if err := e.files.Write(context.Background(), id+"/scratchpad/big.log", []byte(big)); err != nil {
		t.Fatal(err)
	}
	bigHref := "/v1/sessions/" + id + "/files/scratchpad/big.log"
	if r := getContent(t, h, testUserARN, bigHref, nil); r.StatusCode != http.StatusRequestEntityTooLarge || contentCode(t, r) != CodeContentTooLarge {
		t.Errorf("a file over the cap = %d %s", r.StatusCode, r.Body)
	}
	r := getContent(t, h, testUserARN, bigHref, map[string]string{"range": "bytes=0-"})
	if r.StatusCode != 206 || len(bodyOf(t, r)) != MaxServedBytes || r.Headers["Content-Range"] != fmt.Sprintf("bytes 0-%d/%d", MaxServedBytes-1, len(big)) {
		t.Errorf("an open range of a big file = %d %q (%d bytes)", r.StatusCode, r.Headers["Content-Range"], len(bodyOf(t, r)))
	}
	r = getContent(t, h, testUserARN, bigHref, map[string]string{"range": fmt.Sprintf("bytes=%d-", MaxServedBytes)})
	if r.StatusCode != 206 || string(bodyOf(t, r)) != big[MaxServedBytes:] {
		t.Errorf("the rest of a big file = %d %q", r.StatusCode, r.Headers["Content-Range"])
	}
}

// The content routes' answers — every artifact, files of several types, a range, and each
// refusal with its headers — conform to docs/openapi.yaml.
func TestContentAnswersConformToTheOpenAPIDocument(t *testing.T) {
	doc := loadOpenAPI(t)
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	id, _ := parkedThenDecided(t, dir)
	e := openFS(t, dir)
	for p, v := range map[string]string{"scratchpad/page.html": "<b>x</b>", "scratchpad/blob.bin": "\x00\x01", "scratchpad/big.log": strings.Repeat("x", MaxServedBytes+1)} {
		if err := e.files.Write(context.Background(), id+"/"+p, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	h := New(e, nil, nil, WithPolicy(testPolicy))
	check := func(path string, headers map[string]string, want int) {
		t.Helper()
		// the document's {path} is one template segment: the router is asked with the file
		// path's slashes escaped, the handler with the path as API Gateway delivers it
		routed := path
		if i := strings.Index(path, "/files/"); i >= 0 {
			routed = path[:i+len("/files/")] + url.PathEscape(path[i+len("/files/"):])
		}
		hreq, _ := http.NewRequest("GET", "http://127.0.0.1:8080"+routed, nil)
		for k, v := range headers {
			hreq.Header.Set(k, v)
		}
		rt, params, err := router.FindRoute(hreq)
		if err != nil {
			t.Fatalf("GET %s: not in the document: %v", routed, err)
		}
		in := &openapi3filter.RequestValidationInput{Request: hreq, PathParams: params, Route: rt}
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil && want < 400 {
			t.Errorf("GET %s: the request does not conform: %v", path, err)
		}
		resp := getContent(t, h, testUserARN, path, headers)
		if resp.StatusCode != want {
			t.Fatalf("GET %s = %d %s, want %d", path, resp.StatusCode, resp.Body, want)
		}
		header := http.Header{}
		for k, v := range resp.Headers {
			header.Set(k, v)
		}
		out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: resp.StatusCode, Header: header,
			Body: io.NopCloser(bytes.NewReader(bodyOf(t, resp)))}
		if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
			t.Errorf("GET %s → %d does not conform: %v", path, resp.StatusCode, err)
		}
	}
	for _, name := range artifacts.Names {
		check("/v1/sessions/"+id+"/artifacts/"+name, nil, 200)
	}
	check("/v1/sessions/"+id+"/artifacts/trail.json", map[string]string{"Range": "bytes=0-9"}, 206)
	check("/v1/sessions/"+id+"/artifacts/nope.json", nil, 404)
	check("/v1/sessions/"+id+"/files/scratchpad/refund.md", nil, 200)
	check("/v1/sessions/"+id+"/files/scratchpad/page.html", nil, 200)
	check("/v1/sessions/"+id+"/files/scratchpad/blob.bin", nil, 200)
	check("/v1/sessions/"+id+"/files/scratchpad/refund.md", map[string]string{"Range": "bytes=0-3"}, 206)
	check("/v1/sessions/"+id+"/files/scratchpad/refund.md", map[string]string{"Range": "bytes=999-"}, 416)
	check("/v1/sessions/"+id+"/files/scratchpad/big.log", nil, 413)
	check("/v1/sessions/"+id+"/files/checkpoints/x.json", nil, 404)
	check("/v1/sessions/"+id+"/files/../other/x.md", nil, 400)
	check("/v1/sessions/nobody/files/scratchpad/x.md", nil, 404)
}

// evidenceLinks: every path escaped per segment, a delegated park's links naming the session
// whose decision it is (the innermost child), and the park given never changed.
func TestLinkEvidence(t *testing.T) {
	p := &session.Park{ParkID: "p1", Channel: session.ChannelDecision,
		Decision:   &session.PendingDecision{State: "review", Evidence: []string{"scratchpad/a b#1.md", "report.json"}},
		Delegation: &session.DelegatedPark{SessionID: "root~1", Inner: &session.DelegatedPark{SessionID: "root~1~2"}}}
	got := linkEvidence(p, "root")
	if p.Decision.EvidenceLinks != nil {
		t.Error("the park given was changed")
	}
	want := []session.EvidenceLink{{Path: "scratchpad/a b#1.md", Href: "/v1/sessions/root~1~2/files/scratchpad/a%20b%231.md"},
		{Path: "report.json", Href: "/v1/sessions/root~1~2/files/report.json"}}
	if len(got.Decision.EvidenceLinks) != 2 || got.Decision.EvidenceLinks[0] != want[0] || got.Decision.EvidenceLinks[1] != want[1] {
		t.Errorf("evidenceLinks = %+v, want %+v", got.Decision.EvidenceLinks, want)
	}
	if own := linkEvidence(&session.Park{Decision: &session.PendingDecision{Evidence: []string{"x.md"}}}, "s 1"); own.Decision.EvidenceLinks[0].Href != "/v1/sessions/s%201/files/x.md" {
		t.Errorf("own park link = %s", own.Decision.EvidenceLinks[0].Href)
	}
	if linkEvidence(nil, "s") != nil {
		t.Error("no park, a park")
	}
	in := &session.Park{Channel: session.ChannelInput, Input: &session.PendingInput{State: "w"}}
	if linkEvidence(in, "s") != in {
		t.Error("an input park was copied")
	}
}

// The tester's body — {"message":"x","variables":{"v": <9,990 nested []>}}, 20 KB — rendered
// a 199,720,367-byte variables.json: each of eight concurrent Range GETs took 25 s. Now
// variables.json is linear in it, whole and in ranges; an artifact that would render past the
// limit is refused 413 ContentTooLargeError, in ranges or not, as its message says.
func TestADeepVariableRendersInLinearSize(t *testing.T) {
	e := openFS(t, t.TempDir())
	e.qm.push(*text("Noted."))
	h := New(e, nil, nil, WithPolicy(testPolicy))
	deep := strings.Repeat("[", 9990) + strings.Repeat("]", 9990)
	body := `{"message":"x","variables":{"v":` + deep + `}}`
	if status, out := call(t, h, turn("desk", "deep-1", body)); status != http.StatusOK {
		t.Fatalf("start: %d %v", status, out)
	}
	href := "/v1/sessions/deep-1/artifacts/variables.json"
	whole := getContent(t, h, testUserARN, href, nil)
	data := bodyOf(t, whole)
	if whole.StatusCode != http.StatusOK || len(data) > len(body)+4096 {
		t.Fatalf("variables.json = %d, %d bytes for a %d-byte body", whole.StatusCode, len(data), len(body))
	}
	var vars struct {
		Variables map[string]spec.VariableEntry `json:"variables"`
	}
	decodeInto(t, data, &vars)
	if _, ok := vars.Variables["v"].Value.([]any); !ok {
		t.Fatalf("variables.json lacks v: %.200s", data)
	}
	r := getContent(t, h, testUserARN, href, map[string]string{"range": "bytes=100-"})
	if r.StatusCode != http.StatusPartialContent || !bytes.Equal(bodyOf(t, r), data[100:]) {
		t.Errorf("a range of variables.json = %d %q", r.StatusCode, r.Headers["Content-Range"])
	}

	defer func(was int64) { renderLimit = was }(renderLimit)
	renderLimit = int64(len(data)) - 1
	for _, rng := range []string{"", "bytes=0-99", "bytes=-10"} {
		headers := map[string]string{}
		if rng != "" {
			headers["range"] = rng
		}
		r := getContent(t, h, testUserARN, href, headers)
		var b ErrorBody
		decodeInto(t, bodyOf(t, r), &b)
		if r.StatusCode != http.StatusRequestEntityTooLarge || b.Error.Code != CodeContentTooLarge || !strings.Contains(b.Error.Message, "in ranges or not") ||
			b.Error.Details["name"] != artifacts.Variables {
			t.Errorf("Range %q of an artifact over the limit = %d %s", rng, r.StatusCode, bodyOf(t, r))
		}
	}
	if r := getContent(t, h, testUserARN, "/v1/sessions/deep-1/artifacts/metadata.json", nil); r.StatusCode != http.StatusOK {
		t.Errorf("an artifact within the limit = %d", r.StatusCode)
	}
}

// A content of more than MaxServedFileBytes is not served, a range of it neither — the 413's
// message ("in ranges or not") and the answer agree.
func TestContentOverTheFileCapIsRefusedInRangesToo(t *testing.T) {
	data := make([]byte, MaxServedFileBytes+1)
	for _, rng := range []string{"", "bytes=0-9", "bytes=-1"} {
		req := get("/x", nil)
		if rng != "" {
			req.Headers["range"] = rng
		}
		_, err := serveBytes(req, data, "text/plain", "inline", "x.log")
		var ce *contentError
		if !errors.As(err, &ce) || ce.status != http.StatusRequestEntityTooLarge || !strings.Contains(ce.message, "in ranges or not") {
			t.Errorf("Range %q of %d bytes: %v", rng, len(data), err)
		}
	}
}
