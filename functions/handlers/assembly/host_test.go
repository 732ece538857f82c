package assembly

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/archmax-ai/archmax/core/host"
	"github.com/archmax-ai/archmax/core/hostconfig"
	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/outbound"
	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/store/memory"
	s3store "github.com/archmax-ai/archmax/core/store/s3"
	"github.com/archmax-ai/archmax/local/eventbridgefake"
	"github.com/archmax-ai/archmax/local/s3test"
)

const hostFlow = `states:
  work:
    triggers: { manual: }
    instructions: Work.
    tools:
      allow: [get_status]
    mounts:
      allow: [contracts]
mounts:
  allow_always: []
`

// oneModel answers the first call with tool calls, the second with text.
type oneModel struct{ calls []model.Block }

func (m *oneModel) Converse(context.Context, *model.Request) (*model.Response, error) {
	if m.calls != nil {
		c := m.calls
		m.calls = nil
		return &model.Response{StopReason: model.StopToolUse, Message: model.Message{Role: model.RoleAssistant, Content: c}}, nil
	}
	return &model.Response{StopReason: model.StopEndTurn, Message: model.Message{Role: model.RoleAssistant, Content: []model.Block{{Kind: model.BlockText, Text: "ok"}}}}, nil
}

func toolUse(id, name string, in map[string]any) model.Block {
	raw, _ := json.Marshal(in)
	return model.Block{Kind: model.BlockToolUse, ToolUse: &model.ToolUse{ID: id, Name: name, Input: raw}}
}

func put(t *testing.T, c *s3.Client, bucket, key, body string) {
	t.Helper()
	if _, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader([]byte(body))}); err != nil {
		t.Fatal(err)
	}
}

// The functions read the host file from the spec bucket through the authored tree's ETag
// cache (gofakes3 here, through the real SDK), build its http tool, serve its S3 mount and
// run its rules; a new upload is picked up by the next lookup, a broken one fails closed.
func TestHostFileFromTheSpecBucket(t *testing.T) {
	const bucket = "archmax-data"
	c, _ := s3test.NewBucket(t, bucket)
	put(t, c, bucket, "specs/workflows/wf/workflow.yaml", hostFlow)
	put(t, c, bucket, "library/contracts/a.md", "contract A")
	status := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("status of " + strings.TrimPrefix(r.URL.Path, "/orders/")))
	}))
	defer status.Close()
	hostSrc := `tools:
  - name: get_status
    description: The status of an order.
    input: { type: object, properties: { id: { type: string } }, required: [id] }
    http: { method: GET, url: "` + status.URL + `/orders/{id}" }
policyRules:
  - id: host.no-drafts
    effect: block
    tools: [read_file]
    paths: ["contracts/drafts/**"]
    reason: Drafts are not for agents.
mounts:
  - { name: contracts, s3: "s3://` + bucket + `/library/contracts/", governed: true }
`
	put(t, c, bucket, "specs/"+hostconfig.File, hostSrc)
	// the stack deployed this very file (ARCHMAX_HOST_FILE_SHA256): another one is warned about
	var logged bytes.Buffer
	cfg := Config{Bucket: bucket, SpecPrefix: "specs/", SessionPrefix: "sessions/", HostFileSHA256: hostconfig.Digest([]byte(hostSrc))}
	awsCfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")}
	mdl := &oneModel{calls: []model.Block{toolUse("c1", "get_status", map[string]any{"id": "ORD-7"}),
		toolUse("c2", "read_file", map[string]any{"file_path": "contracts/a.md"}),
		toolUse("c3", "read_file", map[string]any{"file_path": "contracts/drafts/b.md"})}}
	engines := NewEngines(session.Config{
		Authored: s3store.NewFiles(c, bucket, cfg.SpecPrefix, s3store.WithETagCache(), s3store.ReadOnly()),
		Log:      memory.New(), Files: s3store.NewFiles(c, bucket, cfg.SessionPrefix), Model: mdl, ModelID: "m",
	}, hostEnv(cfg, awsCfg, c, slog.New(slog.NewJSONHandler(&logged, nil))))
	ctx := context.Background()
	eng, err := engines.Engine(ctx, "wf")
	if err != nil {
		t.Fatal(err)
	}
	out, err := eng.Send(ctx, "s1", session.SendInput{Message: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, m := range out.Messages {
		if m.ToolCallID != "" {
			got[m.ToolCallID] = m.Text
		}
	}
	if got["c1"] != "status of ORD-7" || !strings.Contains(got["c2"], "contract A") ||
		!strings.HasSuffix(got["c3"], "is refused by the host's rule 'host.no-drafts': Drafts are not for agents.") {
		t.Errorf("tool results: %q", got)
	}
	if again, _ := engines.Engine(ctx, "wf"); again != eng {
		t.Error("an unchanged host file rebuilt the engine")
	}
	put(t, c, bucket, "specs/"+hostconfig.File, "tools: {}\n")
	var fe *hostconfig.FileError
	if _, err := engines.Engine(ctx, "wf"); !errors.As(err, &fe) {
		t.Fatalf("a broken upload: %v", err)
	}
	put(t, c, bucket, "specs/"+hostconfig.File, "policyRules: []\n")
	if next, err := engines.Engine(ctx, "wf"); err != nil || next == eng {
		t.Errorf("a fixed upload: %v", err)
	}
	if _, err := engines.Engine(ctx, "wf"); err != nil {
		t.Fatal(err)
	}
	// the deployed file drew no warning; the broken and the fixed upload one each
	hostWarnings := 0
	for _, line := range strings.Split(logged.String(), "\n") {
		if strings.Contains(line, `"level":"WARN"`) && !strings.Contains(line, `"sessionId"`) {
			hostWarnings++
		}
	}
	// every lifecycle event went to the log, at its level, with the session, turn and state
	if !strings.Contains(logged.String(), `"level":"WARN","msg":"tool-blocked","event":"tool-blocked","sessionId":"s1"`) ||
		!strings.Contains(logged.String(), `"level":"INFO","msg":"tool-result"`) || !strings.Contains(logged.String(), `"state":"work"`) {
		t.Errorf("lifecycle events not logged:\n%s", logged.String())
	}
	if n := hostWarnings; n != 2 ||
		!strings.Contains(logged.String(), `"readSha256":"`+hostconfig.Digest([]byte("policyRules: []\n"))+`"`) {
		t.Errorf("%d warnings, want 2:\n%s", n, logged.String())
	}
}

// A mount's S3 location: a folder or one object; none overlaps the spec or session prefix.
func TestS3Mounts(t *testing.T) {
	const bucket = "archmax-data"
	c, _ := s3test.NewBucket(t, bucket)
	put(t, c, bucket, "legal/terms.md", "terms")
	cfg := Config{Bucket: bucket, SpecPrefix: "specs/", SessionPrefix: "sessions/"}
	files, key, err := s3Mount(cfg, c, hostconfig.MountDecl{Name: "terms.md", File: true, S3: "s3://" + bucket + "/legal/terms.md", ReadOnly: true})
	if err != nil || key != "terms.md" {
		t.Fatalf("a file mount: %q %v", key, err)
	}
	if b, err := host.Subtree(files, "terms.md", key).Read(context.Background(), "terms.md"); err != nil || string(b) != "terms" {
		t.Errorf("read: %q %v", b, err)
	}
	for _, s3url := range []string{"s3://" + bucket + "/specs/", "s3://" + bucket + "/specs/skills/", "s3://" + bucket + "/sessions/s1/", "s3://" + bucket + "/spec"} {
		if _, _, err := s3Mount(cfg, c, hostconfig.MountDecl{Name: "x", S3: s3url}); err == nil || !strings.Contains(err.Error(), "no mount may serve it") {
			t.Errorf("%s: %v", s3url, err)
		}
	}
	if _, _, err := s3Mount(cfg, c, hostconfig.MountDecl{Name: "x", Dir: "x"}); err == nil || !strings.Contains(err.Error(), "no s3 location") {
		t.Errorf("a dir-only mount: %v", err)
	}
	if _, _, err := s3Mount(cfg, c, hostconfig.MountDecl{Name: "x", S3: "s3://other-bucket/specs/"}); err != nil {
		t.Errorf("another bucket's prefix: %v", err)
	}
}

const parkFlow = `states:
  work:
    triggers: { manual: }
    instructions: Work.
    transitions:
      - { to: review, description: Ready for review. }
  review:
    type: human
    title: Review
    evidence: [scratchpad/report.md]
    transitions:
      - { to: work, description: Approved., type: approve }
`

// The host file's events section on the functions: a Session Parked published to its bus
// through the real EventBridge client (the PutEvents fake), the info level left out of the
// log, warnings kept.
func TestHostFileEventsToEventBridge(t *testing.T) {
	const bucket = "archmax-data"
	c, _ := s3test.NewBucket(t, bucket)
	put(t, c, bucket, "specs/workflows/wf/workflow.yaml", parkFlow)
	put(t, c, bucket, "specs/"+hostconfig.File, "events:\n  eventBridge: { bus: approvals }\n  log: { info: false }\n")
	fake := eventbridgefake.New()
	srv := httptest.NewServer(fake)
	defer srv.Close()
	var logged bytes.Buffer
	cfg := Config{Bucket: bucket, SpecPrefix: "specs/", SessionPrefix: "sessions/"}
	awsCfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""), BaseEndpoint: aws.String(srv.URL)}
	mdl := &oneModel{calls: []model.Block{toolUse("c1", "archmax_advance", map[string]any{"to": "review", "reason": "done"})}}
	engines := NewEngines(session.Config{
		Authored: s3store.NewFiles(c, bucket, cfg.SpecPrefix, s3store.WithETagCache(), s3store.ReadOnly()),
		Log:      memory.New(), Files: s3store.NewFiles(c, bucket, cfg.SessionPrefix), Model: mdl, ModelID: "m",
	}, hostEnv(cfg, awsCfg, c, slog.New(slog.NewJSONHandler(&logged, nil))))
	ctx := context.Background()
	eng, err := engines.Engine(ctx, "wf")
	if err != nil {
		t.Fatal(err)
	}
	out, err := eng.Send(ctx, "s1", session.SendInput{Message: "hi"})
	if err != nil || out.Status != session.StatusAwaitingDecision {
		t.Fatalf("%v, %+v", err, out)
	}
	got := fake.Events()
	if len(got) != 1 || got[0].EventBusName != "approvals" || got[0].Source != outbound.Source || got[0].DetailType != outbound.SessionParked {
		t.Fatalf("published %+v", got)
	}
	var d map[string]any
	_ = json.Unmarshal(got[0].Detail, &d)
	if d["parkId"] != out.Pending.ParkID || d["apiPath"] != "/v1/sessions/s1" {
		t.Errorf("detail = %v", d)
	}
	if strings.Contains(logged.String(), `"sessionId":"s1"`) { // every event of this turn is info-level
		t.Errorf("info events logged with info: false:\n%s", logged.String())
	}

	// the bus down: the next session's park is answered, its notification owed (the hint in
	// the session prefix), and the sweep publishes it once the bus is back
	fake.Down(true)
	mdl.calls = []model.Block{toolUse("c1", "archmax_advance", map[string]any{"to": "review", "reason": "done"})}
	if out, err := eng.Send(ctx, "s2", session.SendInput{Message: "hi"}); err != nil || out.Status != session.StatusAwaitingDecision {
		t.Fatalf("with the bus down: %v", err)
	}
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("sessions/" + session.OutboxPrefix + "s2")}); err != nil {
		t.Errorf("no outbox hint: %v", err)
	}
	fake.Down(false)
	res, err := engines.Sweep(ctx, time.Now(), 10, nil)
	if err != nil || res.Published != 1 || len(fake.Events()) != 2 || fake.Events()[1].DetailType != outbound.SessionParked {
		t.Errorf("sweep %+v, %v; %d events", res, err, len(fake.Events()))
	}
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("sessions/" + session.OutboxPrefix + "s2")}); err == nil {
		t.Error("the hint outlived the publish")
	}
}
