package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/archmax-ai/archmax/core/artifacts"
	"github.com/archmax-ai/archmax/functions/handlers/httpapi"
)

// readReq is a GET of the sessions Lambda by route key, as API Gateway delivers it.
func readReq(routeKey, path string, params map[string]string) events.APIGatewayV2HTTPRequest {
	req := request(routeKey, path, params, "")
	req.RequestContext.HTTP.Method = http.MethodGet
	return req
}

// bytesOf is an answer's body.
func bytesOf(t *testing.T, resp events.APIGatewayV2HTTPResponse) []byte {
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

// Spec 02 §10 on DynamoDB Local and S3 (gofakes3) through the real SDK: a session parked by
// the turn Lambda and decided by the decide Lambda — two cold starts sharing only the
// stores — is read by a third, the sessions Lambda: each artifact holds what both wrote, and
// the park's evidence link serves the file the agent wrote, read-only, with the
// hostile-content headers.
func TestArtifactsAndEvidenceAcrossLambdas(t *testing.T) {
	s := newStack(t, "evidence.model.yaml")
	turn := s.boot(t)
	a := call(t, turn.turn, startReq("review", `{"message":"Please draft the Q3 summary."}`))
	if a.status != http.StatusOK || a.body["kind"] != "parked" {
		t.Fatalf("park: %d %v", a.status, a.body)
	}
	id, _ := a.body["sessionId"].(string)
	dec, _ := a.body["pending"].(map[string]any)["decision"].(map[string]any)
	links, _ := dec["evidenceLinks"].([]any)
	if len(links) != 1 {
		t.Fatalf("evidenceLinks = %v", dec["evidenceLinks"])
	}
	href, _ := links[0].(map[string]any)["href"].(string)
	if href != "/v1/sessions/"+id+"/files/scratchpad/draft.md" {
		t.Fatalf("evidence href = %q", href)
	}
	decide := s.boot(t)
	if d := call(t, decide.decide, decisionReq(id, `{"to":"publish","comment":"Looks right"}`)); d.status != http.StatusOK || d.body["kind"] != "completed" {
		t.Fatalf("decide: %d %v", d.status, d.body)
	}

	asm := s.assemble(t) // the sessions Lambda: its own cold start
	reader := httpapi.New(asm.Engines, asm.Runner, nil, httpapi.WithPolicy(asm.Access))
	got := map[string][]byte{}
	for _, name := range artifacts.Names {
		resp, _ := reader.HandleRead(context.Background(), readReq(httpapi.RouteArtifact, "/v1/sessions/"+id+"/artifacts/"+name,
			map[string]string{"sessionId": id, "name": name}))
		if resp.StatusCode != http.StatusOK || resp.Headers["X-Content-Type-Options"] != "nosniff" || resp.Headers["Content-Security-Policy"] != "sandbox" {
			t.Fatalf("GET %s = %d %v %s", name, resp.StatusCode, resp.Headers, bytesOf(t, resp))
		}
		got[name] = bytesOf(t, resp)
	}
	if !strings.Contains(string(got[artifacts.GraphMermaid]), "review{{review}}") {
		t.Errorf("graph.mmd = %s", got[artifacts.GraphMermaid])
	}
	var traj artifacts.TrajectoryDoc
	if err := json.Unmarshal(got[artifacts.Trajectory], &traj); err != nil {
		t.Fatal(err)
	}
	var states []string
	for _, sg := range traj.Segments {
		states = append(states, sg.State)
	}
	if traj.FinalAnswer != "Published." || strings.Join(states, ",") != "draft,review,publish" {
		t.Errorf("trajectory = %s", got[artifacts.Trajectory])
	}
	var trail struct {
		Steps []struct{ To, Kind, Reason string } `json:"steps"`
	}
	if err := json.Unmarshal(got[artifacts.Trail], &trail); err != nil || len(trail.Steps) != 3 || trail.Steps[2].Kind != "human" || trail.Steps[2].Reason != "Looks right" {
		t.Errorf("trail.json = %s", got[artifacts.Trail])
	}
	var vars struct {
		Variables map[string]any `json:"variables"`
	}
	if err := json.Unmarshal(got[artifacts.Variables], &vars); err != nil || vars.Variables == nil {
		t.Errorf("variables.json = %s", got[artifacts.Variables])
	}
	var meta struct {
		RuntimeContract, SpecHash string
		Usage                     *artifacts.Usage
	}
	sum := s.summary(t, id)
	if err := json.Unmarshal(got[artifacts.Metadata], &meta); err != nil || meta.RuntimeContract != "archmax-harness@1" || meta.SpecHash != sum.SpecHash ||
		meta.Usage == nil || sum.Usage == nil || meta.Usage.InputTokens != 220 || meta.Usage.InputTokens != sum.Usage.InputTokens || meta.Usage.OutputTokens != sum.Usage.OutputTokens {
		t.Errorf("metadata.json = %s (summary usage %+v)", got[artifacts.Metadata], sum.Usage)
	}

	// the evidence, by its link, with the greedy {path+} parameter
	resp, _ := reader.HandleRead(context.Background(), readReq(httpapi.RouteFile, href, map[string]string{"sessionId": id, "path": "scratchpad/draft.md"}))
	if resp.StatusCode != http.StatusOK || string(bytesOf(t, resp)) != "# Q3 summary\n\nRevenue up 4%.\n" ||
		resp.Headers["Content-Type"] != "text/markdown; charset=utf-8" || resp.Headers["Content-Security-Policy"] != "sandbox" {
		t.Fatalf("GET the evidence = %d %v %q", resp.StatusCode, resp.Headers, bytesOf(t, resp))
	}
	ranged := readReq(httpapi.RouteFile, href, map[string]string{"sessionId": id, "path": "scratchpad/draft.md"})
	ranged.Headers["range"] = "bytes=2-3"
	if resp, _ := reader.HandleRead(context.Background(), ranged); resp.StatusCode != http.StatusPartialContent || string(bytesOf(t, resp)) != "Q3" {
		t.Errorf("a range of the evidence = %d %q", resp.StatusCode, bytesOf(t, resp))
	}
	for p, want := range map[string]int{"scratchpad/none.md": 404, "_specs/" + sum.SpecHash + ".json": 404, "../" + id + "x/scratchpad/draft.md": 400} {
		resp, _ := reader.HandleRead(context.Background(), readReq(httpapi.RouteFile, "/v1/sessions/"+id+"/files/"+p, map[string]string{"sessionId": id, "path": p}))
		if resp.StatusCode != want {
			t.Errorf("GET files/%s = %d %s, want %d", p, resp.StatusCode, bytesOf(t, resp), want)
		}
	}
}
