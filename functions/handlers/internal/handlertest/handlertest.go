// Package handlertest assembles engines for the tests of the handler packages: memory
// stores, the authored files given, and a scripted model (spec 05) served by the Converse
// fake and reached through the real Bedrock client.
package handlertest

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/model/bedrock"
	"github.com/archmax-ai/archmax/core/model/scripted"
	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/store/memory"
	"github.com/archmax-ai/archmax/local/conversefake"
)

// Engines returns engines over memory stores holding files (authored path → content),
// answering model calls from script; clock may be nil (time.Now). The fake stops with t.
func Engines(t testing.TB, files map[string]string, script string, clock func() time.Time) *session.Engines {
	t.Helper()
	ctx := context.Background()
	authored := memory.NewFiles()
	for name, src := range files {
		if err := authored.Write(ctx, name, []byte(src)); err != nil {
			t.Fatal(err)
		}
	}
	s, err := scripted.Parse("test.model.yaml", []byte(script))
	if err != nil {
		t.Fatal(err)
	}
	fake := httptest.NewServer(conversefake.New(s))
	t.Cleanup(fake.Close)
	mdl, err := bedrock.New(ctx, bedrock.Config{Region: "us-east-1", Endpoint: fake.URL, AccessKeyID: "local", SecretAccessKey: "local"})
	if err != nil {
		t.Fatal(err)
	}
	return session.NewEngines(session.Config{Authored: authored, Log: memory.New(), Files: memory.NewFiles(), Model: mdl, ModelID: "test", Clock: clock})
}
