package tracing

import (
	"bytes"
	"context"
	"errors"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel"
)

// The SDK's errors never reach the standard logger: an export that fails — at each
// invocation's flush, then in the background at shutdown — is one warning through
// ReportErrors, however many batches fail; another error is another warning; after
// Shutdown the SDK's errors go nowhere.
func TestExportErrorsAreReportedOnceNotLogged(t *testing.T) {
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "3600000") // no timed export: only the flushes and the shutdown send
	var std bytes.Buffer
	orig := log.Writer()
	log.SetOutput(&std)
	defer log.SetOutput(orig)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusBadRequest) }))
	defer srv.Close()
	p, err := FromEnv(context.Background(), env(map[string]string{EnvEndpoint: srv.URL}), "archmax-test")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var warnings []string
	p.ReportErrors(func(msg string) { mu.Lock(); warnings = append(warnings, msg); mu.Unlock() })
	h := Handler(p, p.Report, func(ctx context.Context, in string) (string, error) {
		_, s := p.TracerProvider().Tracer("test").Start(ctx, "work "+in)
		s.End()
		return in, nil
	})
	for _, in := range []string{"a", "b", "c"} {
		if out, err := h(context.Background(), in); err != nil || out != in {
			t.Fatalf("handler answered %q, %v", out, err)
		}
	}
	otel.Handle(errors.New("another problem"))
	_, s := p.TracerProvider().Tracer("test").Start(context.Background(), "left for the shutdown")
	s.End()
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	otel.Handle(errors.New("after the shutdown"))
	mu.Lock()
	defer mu.Unlock()
	if len(warnings) != 2 || !strings.HasPrefix(warnings[0], "spans not exported: failed to send to "+srv.URL+"/v1/traces: 400 Bad Request") ||
		warnings[1] != "another problem" {
		t.Errorf("warnings = %q, want the failed export once, then the other error", warnings)
	}
	if std.Len() != 0 {
		t.Errorf("the standard logger got %q", std.String())
	}
}

// Until ReportErrors is called the provider's errors are dropped; a nil provider reports
// nothing.
func TestReportBeforeReportErrors(t *testing.T) {
	p, err := FromEnv(context.Background(), env(map[string]string{EnvEndpoint: "http://localhost:4318"}), "archmax-test")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Shutdown(context.Background()) }()
	p.Report(errors.New("early"))
	var got []string
	p.ReportErrors(func(msg string) { got = append(got, msg) })
	p.Report(errors.New("traces export: context deadline exceeded"))
	p.Report(errors.New("context deadline exceeded"))
	p.Report(nil)
	if strings.Join(got, "|") != "spans not exported: context deadline exceeded" {
		t.Errorf("reported %q", got)
	}
	var none *Provider
	none.ReportErrors(func(string) { t.Error("a nil provider reported") })
	none.Report(errors.New("x"))
}
