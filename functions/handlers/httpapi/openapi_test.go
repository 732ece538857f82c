package httpapi

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/archmax-ai/archmax/local/apigw"
)

const openAPIFile = "../../../docs/openapi.yaml"

func loadOpenAPI(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromFile(openAPIFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("docs/openapi.yaml is not a valid OpenAPI 3 document: %v", err)
	}
	return doc
}

// DESIGN §1: the OpenAPI document validates, every operation in it is routed by this
// handler, and every route this handler declares is in the document.
func TestOpenAPIDocumentMatchesTheRoutes(t *testing.T) {
	doc := loadOpenAPI(t)
	var documented []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			documented = append(documented, method+" "+path)
			raw := strings.NewReplacer("{workflow}", "desk", "{sessionId}", "s-1", "{name}", "graph.json", "{path}", "scratchpad/x.md").Replace(path)
			req := request("$default", method, raw, "")
			_, readable := readRoute(req)
			if _, err := route(req); err != nil && !readable {
				t.Errorf("%s %s is documented but not routed: %v", method, path, err)
			}
		}
	}
	// the file route's greedy {path+} (API Gateway) is the document's {path}, which may hold slashes
	file := strings.Replace(RouteFile, "{path+}", "{path}", 1)
	for _, key := range []string{RouteStart, RouteTurn, RouteDecision, RouteDelivery, RouteList, RouteSession, RouteMessages, RouteEvents, RouteArtifact, file} {
		if !slices.Contains(documented, key) {
			t.Errorf("route %q is served but not documented", key)
		}
	}
}

// Live answers of the handler — outcomes, errors and read pages — conform to the document.
func TestAnswersConformToTheOpenAPIDocument(t *testing.T) {
	doc := loadOpenAPI(t)
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	h, qm := newParkFixture(t)
	qm.push(tool("archmax_advance", map[string]any{"to": "signoff", "reason": "ready"}), *text("Sent to sign-off."))
	check := func(method, path, body string, want int) {
		t.Helper()
		hreq, _ := http.NewRequest(method, "http://127.0.0.1:8080"+path, strings.NewReader(body))
		hreq.Header.Set("Content-Type", "application/json")
		rt, params, err := router.FindRoute(hreq)
		if err != nil {
			t.Fatalf("%s %s: not in the document: %v", method, path, err)
		}
		in := &openapi3filter.RequestValidationInput{Request: hreq, PathParams: params, Route: rt}
		if body != "" {
			if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil && want < 400 {
				t.Errorf("%s %s: the request does not conform: %v", method, path, err)
			}
			hreq.Body = io.NopCloser(strings.NewReader(body))
		}
		ev := request("$default", method, strings.SplitN(path, "?", 2)[0], body)
		if q := hreq.URL.Query(); len(q) > 0 {
			ev.QueryStringParameters = map[string]string{}
			for k := range q {
				ev.QueryStringParameters[k] = q.Get(k)
			}
		}
		resp, err := h.Handle(context.Background(), ev)
		if err != nil || resp.StatusCode != want {
			t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, resp.Body, want)
		}
		header := http.Header{}
		for k, v := range resp.Headers {
			header.Set(k, v)
		}
		out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: resp.StatusCode, Header: header,
			Body: io.NopCloser(bytes.NewReader([]byte(resp.Body)))}
		if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
			t.Errorf("%s %s → %d does not conform: %v\n%s", method, path, resp.StatusCode, err, resp.Body)
		}
	}
	check("POST", "/v1/workflows/desk/sessions/o1/turns", `{"message":"file it"}`, 200)
	check("POST", "/v1/sessions/o1/decision", `{"to":"nowhere"}`, 422)
	check("POST", "/v1/sessions/o1/deliveries", `{"trigger":"courier"}`, 409)
	check("POST", "/v1/workflows/nope/sessions", `{"message":"hi"}`, 404)
	check("GET", "/v1/sessions?limit=10", "", 200)
	check("GET", "/v1/sessions/o1", "", 200)
	check("GET", "/v1/sessions/o1/messages?after=0&limit=2", "", 200)
	check("GET", "/v1/sessions/o1/events?after=0", "", 200)
	check("GET", "/v1/sessions/nobody", "", 404)
	qm.push(*text("Done."))
	check("POST", "/v1/sessions/o1/decision", `{"to":"done","comment":"fine"}`, 200)
	check("DELETE", "/v1/sessions/o1", "", 204)
	check("DELETE", "/v1/sessions/o1", "", 204)
	check("GET", "/v1/sessions/o1", "", 404)
}

// The 405 (with its Allow header) and both 413 shapes conform to the document: the
// handler's PayloadTooLargeError over 1 MiB, and API Gateway's own {"message"} over 10 MiB
// (local/apigw, as the real gateway answers before any function runs, C6-16).
func TestRefusalShapesConformToTheOpenAPIDocument(t *testing.T) {
	doc := loadOpenAPI(t)
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := newFixture(t)
	// validate checks an answer against the documented operation method path (the route the
	// refused request resembles) for its status.
	validate := func(name, method, path string, status int, header http.Header, body []byte) {
		t.Helper()
		hreq, _ := http.NewRequest(method, "http://127.0.0.1:8080"+path, nil)
		rt, params, err := router.FindRoute(hreq)
		if err != nil {
			t.Fatalf("%s: %s %s not in the document: %v", name, method, path, err)
		}
		in := &openapi3filter.RequestValidationInput{Request: hreq, PathParams: params, Route: rt}
		out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: status, Header: header,
			Body: io.NopCloser(bytes.NewReader(body))}
		if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
			t.Errorf("%s → %d does not conform: %v\n%s", name, status, err, body)
		}
	}
	headers := func(m map[string]string) http.Header {
		out := http.Header{}
		for k, v := range m {
			out.Set(k, v)
		}
		return out
	}

	resp, _ := h.Handle(context.Background(), request("$default", "PUT", "/v1/sessions/s-1", ""))
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("PUT a session = %d", resp.StatusCode)
	}
	validate("PUT /v1/sessions/s-1", "GET", "/v1/sessions/s-1", resp.StatusCode, headers(resp.Headers), []byte(resp.Body))
	delete(resp.Headers, "Allow")
	hreq, _ := http.NewRequest("GET", "http://127.0.0.1:8080/v1/sessions/s-1", nil)
	rt, params, _ := router.FindRoute(hreq)
	noAllow := &openapi3filter.ResponseValidationInput{RequestValidationInput: &openapi3filter.RequestValidationInput{Request: hreq, PathParams: params, Route: rt},
		Status: resp.StatusCode, Header: headers(resp.Headers), Body: io.NopCloser(strings.NewReader(resp.Body))}
	if openapi3filter.ValidateResponse(context.Background(), noAllow) == nil {
		t.Error("the document does not require Allow on a 405")
	}

	resp, _ = h.Handle(context.Background(), start("greeter", `{"message":"`+strings.Repeat("x", MaxBodyBytes)+`"}`))
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("a 1 MiB body = %d", resp.StatusCode)
	}
	validate("the handler's 413", "POST", "/v1/workflows/greeter/sessions", resp.StatusCode, headers(resp.Headers), []byte(resp.Body))

	rec := httptest.NewRecorder()
	big := httptest.NewRequest("POST", "/v1/workflows/greeter/sessions", strings.NewReader(strings.Repeat("x", apigw.MaxBodyBytes+1)))
	apigw.Handler(h.Handle, nil).ServeHTTP(rec, big)
	if rec.Code != http.StatusRequestEntityTooLarge || !strings.Contains(rec.Body.String(), `"message"`) {
		t.Fatalf("a 10 MiB body through the gateway = %d %s", rec.Code, rec.Body)
	}
	validate("API Gateway's 413", "POST", "/v1/workflows/greeter/sessions", rec.Code, rec.Header(), rec.Body.Bytes())
}
