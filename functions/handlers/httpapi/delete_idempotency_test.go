package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/archmax-ai/archmax/core/store"
	ddbstore "github.com/archmax-ai/archmax/core/store/dynamodb"
	"github.com/archmax-ai/archmax/core/store/fs"
	"github.com/archmax-ai/archmax/core/store/memory"
	"github.com/archmax-ai/archmax/functions/handlers/access"
	"github.com/archmax-ai/archmax/local/dynamotest"
)

// untied hides a log's store.IdempotencyTier: a record that could not be tied (a delete
// that raced it).
type untied struct{ store.Log }

// RD22-14: deleting a session removes the Idempotency-Key records of its requests, so a
// retry after the DELETE runs anew (no replay of the deleted session's answer: a GET says
// 404); and a record that outlived the delete (not tied) is discarded at its replay. On the
// memory, fs and DynamoDB Local stores.
func TestDeleteRemovesTheIdempotencyRecords(t *testing.T) {
	logs := map[string]func(t *testing.T) store.Log{
		"memory": func(*testing.T) store.Log { return memory.New() },
		"fs": func(t *testing.T) store.Log {
			s, err := fs.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
		"dynamodb": func(t *testing.T) store.Log {
			client, table := dynamotest.NewTable(t)
			return ddbstore.New(client, table, nil)
		},
		"untied": func(*testing.T) store.Log { return untied{memory.New()} },
	}
	for name, open := range logs {
		t.Run(name, func(t *testing.T) {
			l := open(t)
			f := newAuthz(t, authzPolicy, func(store.Log) store.Log { return l })
			ctx := context.Background()
			req := withKey(turn("desk", "s-key", `{"message":"please file it"}`), "k-1")
			f.e.qm.push(tool("archmax_advance", map[string]any{"to": "signoff", "reason": "ready"}), *text("Sent to sign-off."))
			status, first := f.as(danaARN, req)
			if status != http.StatusOK || first["status"] != "awaiting_decision" {
				t.Fatalf("first: %d %v", status, first)
			}
			resp, _ := f.h.Handle(ctx, signedAs(req, danaARN))
			if resp.Headers["Idempotent-Replayed"] != "true" {
				t.Fatalf("the repeat before the delete is not replayed: %d %s", resp.StatusCode, resp.Body)
			}
			storeKey, _ := idemKey(req, "k-1", f.caller(signedAs(req, danaARN)))
			if _, found, err := l.RememberIdempotent(ctx, storeKey, []byte("probe"), -time.Second); err != nil || !found {
				t.Fatalf("the record before the delete: %v, %v", found, err)
			}
			if status, body := f.deleteAs(danaARN, del("s-key")); status != http.StatusNoContent {
				t.Fatalf("DELETE: %d %v", status, body)
			}
			if name != "untied" {
				if old, found, err := l.RememberIdempotent(ctx, storeKey, []byte("probe"), -time.Second); err != nil || found {
					t.Fatalf("the record after the delete: %q, %v, %v", old, found, err)
				}
			}
			f.e.qm.push(*text("Hello again."))
			resp, err := f.h.Handle(ctx, signedAs(req, danaARN))
			if err != nil {
				t.Fatal(err)
			}
			if resp.Headers["Idempotent-Replayed"] == "true" || resp.Body == mustJSON(t, first) {
				t.Fatalf("a retry after the delete replayed the deleted session's answer: %d %s", resp.StatusCode, resp.Body)
			}
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("the retry after the delete: %d %s", resp.StatusCode, resp.Body)
			}
		})
	}
}

// caller is the caller the fixture's policy identifies in req.
func (f *authzFixture) caller(req events.APIGatewayV2HTTPRequest) access.Caller {
	f.t.Helper()
	c, err := authzPolicy.Identify(req)
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

// RD22-20: the DELETE route's delete writes its audit line to the handler's log, naming the
// caller.
func TestDeleteRouteAuditLine(t *testing.T) {
	f := newAuthz(t, authzPolicy, nil)
	f.parked("a-dana")
	var buf bytes.Buffer
	h := New(f.e, nil, slog.New(slog.NewJSONHandler(&buf, nil)), WithPolicy(authzPolicy))
	resp, err := h.Handle(context.Background(), signedAs(del("a-dana"), danaARN))
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %+v %v", resp, err)
	}
	var line map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(buf.Bytes()), &line); err != nil {
		t.Fatalf("log = %q: %v", buf.String(), err)
	}
	if line["msg"] != "session deleted" || line["sessionId"] != "a-dana" || line["by"] != "request" ||
		line["principal"] != f.caller(signedAs(del("a-dana"), danaARN)).Principal.Key() {
		t.Errorf("audit line = %v", line)
	}
}
