package bedrock

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/model/scripted"
	"github.com/archmax-ai/archmax/local/conversefake"
)

// Streams read at the same time on one Client each decode their own events: the SDK's
// protocol shares one event-stream codec (and its payload buffer) per client, so every
// ConverseStream call gets a protocol of its own. Run under -race (make race) this fails
// on a shared codec; without it, a mixed-up payload shows as a wrong or repeated answer.
func TestConcurrentStreamsOnOneClient(t *testing.T) {
	const n = 8
	var script strings.Builder
	script.WriteString("agent:\n")
	want := map[string]bool{}
	for i := range n {
		text := fmt.Sprintf("answer %d: %s", i, strings.Repeat(fmt.Sprintf("w%d ", i), 40))
		text = strings.TrimSpace(text)
		want[text] = true
		fmt.Fprintf(&script, "  - text: %q\n", text)
	}
	s, err := scripted.Parse("t.model.yaml", []byte(script.String()))
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(conversefake.New(s, conversefake.WithChunkSize(1)))
	defer hs.Close()
	c, err := New(context.Background(), Config{Region: "us-east-1", Endpoint: hs.URL, AccessKeyID: "AKIDTEST", SecretAccessKey: "secret", MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		got = map[string]int{}
	)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var pieces strings.Builder
			resp, err := c.ConverseStream(context.Background(), ask("go", nil), func(d model.Delta) { pieces.WriteString(d.Text) })
			if err != nil {
				t.Error(err)
				return
			}
			text := ""
			if len(resp.Message.Content) == 1 {
				text = resp.Message.Content[0].Text
			}
			if pieces.String() != text {
				t.Errorf("the deltas %q are not the answer %q", pieces.String(), text)
			}
			mu.Lock()
			got[text]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	for text, k := range got {
		if !want[text] || k != 1 {
			t.Errorf("answer %q seen %d times; want each scripted answer once", text, k)
		}
	}
	if len(got) != n {
		t.Errorf("%d distinct answers, want %d", len(got), n)
	}
}
