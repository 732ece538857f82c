package apigw

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// The emulated event carries what a $default route delivers, and the answer is written
// back as the handler gave it.
func TestRoundTrip(t *testing.T) {
	var got events.APIGatewayV2HTTPRequest
	srv := httptest.NewServer(Handler(func(_ context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		got = req
		return events.APIGatewayV2HTTPResponse{StatusCode: 201, Headers: map[string]string{"Content-Type": "application/json"}, Body: `{"ok":true}`}, nil
	}, nil))
	defer srv.Close()
	req, _ := http.NewRequest("POST", srv.URL+"/v1/sessions/s1/decision?x=1&x=2", strings.NewReader(`{"to":"done"}`))
	req.Header.Set("Idempotency-Key", "k-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 201 || string(body) != `{"ok":true}` || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("answer %d %q %v", resp.StatusCode, body, resp.Header)
	}
	raw, _ := base64.StdEncoding.DecodeString(got.Body)
	if got.Version != "2.0" || got.RouteKey != "$default" || got.RawPath != "/v1/sessions/s1/decision" || got.RequestContext.HTTP.Method != "POST" ||
		got.Headers["idempotency-key"] != "k-1" || !got.IsBase64Encoded || string(raw) != `{"to":"done"}` ||
		got.QueryStringParameters["x"] != "1,2" || got.RequestContext.RequestID == "" || got.RequestContext.HTTP.SourceIP != "127.0.0.1" {
		t.Errorf("event = %+v", got)
	}
}

// A handler error is API Gateway's 500; an oversized body never reaches the handler.
func TestFailures(t *testing.T) {
	called := false
	h := Handler(func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		called = true
		return events.APIGatewayV2HTTPResponse{}, errors.New("boom")
	}, nil)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("POST", "/x", strings.NewReader("{}")))
	if w.Code != 500 || !strings.Contains(w.Body.String(), "Internal Server Error") {
		t.Errorf("handler error: %d %s", w.Code, w.Body)
	}
	called = false
	w = httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("POST", "/x", strings.NewReader(strings.Repeat("a", MaxBodyBytes+1))))
	if w.Code != 413 || called {
		t.Errorf("oversized body: %d, handler called %v", w.Code, called)
	}
}
