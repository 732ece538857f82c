package stream_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/archmax-ai/archmax/functions/handlers/stream"
)

// The stream's answers — the event streams, its own refusals and the API's — are the
// text/event-stream and JSON answers docs/openapi.yaml gives these routes.
func TestStreamAnswersConformToTheOpenAPIDocument(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromFile("../../../docs/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	openapi3filter.RegisterBodyDecoder(stream.ContentType, openapi3filter.FileBodyDecoder)
	f := fsFixture(t, false)
	h := stream.New(f.api, nil)
	sessionID := ""
	check := func(method, path, query, body string, header map[string]string, want int) string {
		t.Helper()
		var u events.LambdaFunctionURLRequest
		_ = json.Unmarshal(urlRequest(method, path, query, body, owner, header), &u)
		sink := &recSink{wrote: make(chan struct{}, 1)}
		h.Serve(context.Background(), stream.FromFunctionURL(u), sink)
		hreq, _ := http.NewRequest(method, "http://127.0.0.1:8080"+path+"?"+query, strings.NewReader(body))
		for k, v := range u.Headers {
			hreq.Header.Set(k, v)
		}
		rt, params, err := router.FindRoute(hreq)
		if err != nil {
			t.Fatalf("%s %s: not in the document: %v", method, path, err)
		}
		in := &openapi3filter.RequestValidationInput{Request: hreq, PathParams: params, Route: rt,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
		if sink.status != want {
			t.Fatalf("%s %s: %d %s, want %d", method, path, sink.status, sink.text(), want)
		}
		hd := http.Header{}
		hd.Set("Content-Type", map[bool]string{true: stream.ContentType, false: "application/json"}[want == http.StatusOK])
		out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: sink.status, Header: hd,
			Body: io.NopCloser(bytes.NewReader([]byte(sink.text())))}
		if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
			t.Errorf("%s %s → %d does not conform: %v\n%.400s", method, path, sink.status, err, sink.text())
		}
		return sink.text()
	}
	out := check("POST", "/v1/workflows/desk/sessions", "", `{"message":"hi"}`, nil, http.StatusOK)
	if i := strings.Index(out, `"sessionId":"`); i >= 0 {
		sessionID = out[i+len(`"sessionId":"`):]
		sessionID = sessionID[:strings.IndexByte(sessionID, '"')]
	}
	check("POST", "/v1/workflows/desk/sessions/"+sessionID+"/turns", "", `{"message":"again"}`, nil, http.StatusOK)
	check("GET", "/v1/sessions/"+sessionID+"/events", "after=0", "", nil, http.StatusOK)
	check("GET", "/v1/sessions/"+sessionID+"/events", "", "", map[string]string{"last-event-id": "3"}, http.StatusOK)
	check("POST", "/v1/workflows/nope/sessions", "", `{"message":"hi"}`, nil, http.StatusNotFound)
	check("POST", "/v1/workflows/desk/sessions", "", `{"message":"hi"}`, map[string]string{"accept": "application/json"}, http.StatusNotAcceptable)
	check("GET", "/v1/sessions/nobody/events", "", "", nil, http.StatusNotFound)
}
