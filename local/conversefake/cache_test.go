package conversefake_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/model/bedrock"
	"github.com/archmax-ai/archmax/core/model/scripted"
	"github.com/archmax-ai/archmax/local/conversefake"
)

// The prompt-cache accounting, through the real wire protocol: each request is built as the
// engine builds one (a model.Request), sent by the Bedrock adapter to the fake, and the
// usage is read back both from the adapter's answer and from what the fake recorded.

const sonnet = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"

// testClock is the clock the fake's TTLs run on; only the test moves it.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type cacheRig struct {
	fake   *conversefake.Server
	client *bedrock.Client
	clock  *testClock
	stream bool
}

// newCacheRig serves script (which answers every call with "ok" when empty) with the
// given options and a test clock.
func newCacheRig(t *testing.T, script string, stream bool, opts ...conversefake.Option) *cacheRig {
	t.Helper()
	if script == "" {
		script = "usage: estimate\nagent:\n" + strings.Repeat("  - text: ok\n", 40)
	}
	s, err := scripted.Parse("cache.model.yaml", []byte(script))
	if err != nil {
		t.Fatal(err)
	}
	clock := &testClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	fake := conversefake.New(s, append([]conversefake.Option{conversefake.WithClock(clock.now)}, opts...)...)
	hs := httptest.NewServer(fake)
	t.Cleanup(hs.Close)
	client, err := bedrock.New(context.Background(), bedrock.Config{Region: "us-east-1", Endpoint: hs.URL,
		AccessKeyID: "local", SecretAccessKey: "local", MaxAttempts: 2, MaxBackoff: time.Millisecond, NoStreaming: !stream})
	if err != nil {
		t.Fatal(err)
	}
	return &cacheRig{fake: fake, client: client, clock: clock, stream: stream}
}

// call sends req and returns the usage the fake answered (wire terms), after checking that
// the adapter reported the same counts with the inclusive input total.
func (r *cacheRig) call(t *testing.T, req model.Request) scripted.Usage {
	t.Helper()
	if req.ModelID == "" {
		req.ModelID = sonnet
	}
	var resp *model.Response
	var err error
	if r.stream {
		resp, err = r.client.ConverseStream(context.Background(), &req, func(model.Delta) {})
	} else {
		resp, err = r.client.Converse(context.Background(), &req)
	}
	if err != nil {
		t.Fatal(err)
	}
	recs := r.fake.Requests()
	got := recs[len(recs)-1].Usage
	want := model.Usage{InputTokens: got.InputTokens + got.CacheReadInputTokens + got.CacheWriteInputTokens,
		OutputTokens: got.OutputTokens, CacheReadTokens: got.CacheReadInputTokens, CacheWriteTokens: got.CacheWriteInputTokens}
	if resp.Usage == nil || *resp.Usage != want {
		t.Fatalf("the adapter reported %+v; the fake answered %+v", resp.Usage, got)
	}
	return got
}

func expectUsage(t *testing.T, what string, got scripted.Usage, input, read, write int64) {
	t.Helper()
	if got.InputTokens != input || got.CacheReadInputTokens != read || got.CacheWriteInputTokens != write {
		t.Errorf("%s: input %d, read %d, write %d; want input %d, read %d, write %d",
			what, got.InputTokens, got.CacheReadInputTokens, got.CacheWriteInputTokens, input, read, write)
	}
}

// text is a text of exactly n estimated tokens (4n characters), made of tag.
func text(tag string, n int) string { return strings.Repeat(tag, 4*n)[:4*n] }

func txt(s string) model.Block { return model.Block{Kind: model.BlockText, Text: s} }

var cachePoint = model.Block{Kind: model.BlockCachePoint}

func user(blocks ...model.Block) model.Message {
	return model.Message{Role: model.RoleUser, Content: blocks}
}

func assistant(blocks ...model.Block) model.Message {
	return model.Message{Role: model.RoleAssistant, Content: blocks}
}

// tool is a tool spec of 1 + n estimated tokens: "t_<c>" (3) plus a description of 4n - 3
// characters plus `{"type":"object"}` (17) is 4n + 17 characters.
func tool(c string, n int) model.ToolSpec {
	return model.ToolSpec{Name: "t_" + c, Description: text(c, n)[:4*n-3], InputSchema: json.RawMessage(`{ "type": "object" }`)}
}

func TestCacheEstimateWithoutCachePoints(t *testing.T) {
	for _, stream := range []bool{false, true} {
		r := newCacheRig(t, "usage: estimate\nagent:\n  - text: abcdefgh\n    toolCalls: [{name: read_file, input: {file_path: x}}]\n", stream)
		got := r.call(t, model.Request{Tools: []model.ToolSpec{tool("a", 10)}, System: []model.Block{txt(text("s", 100))},
			Messages: []model.Message{user(txt("hello"))}})
		// the tool spec is 57 characters → 15 tokens; the system 400 → 100; "hello" → 2
		expectUsage(t, "no cachePoint", got, 15+100+2, 0, 0)
		// "abcdefgh" → 2; read_file + {"file_path":"x"} is 9 + 17 characters → 7
		if got.OutputTokens != 9 {
			t.Errorf("outputTokens %d, want 9", got.OutputTokens)
		}
	}
}

func TestCacheOrderToolsSystemMessages(t *testing.T) {
	for _, stream := range []bool{false, true} {
		r := newCacheRig(t, "", stream)
		tools := []model.ToolSpec{tool("a", 600), tool("b", 600)} // 605 + 605 = 1,210 tokens (4n+17 → n+5)
		req := func(tools []model.ToolSpec, system, msg string) model.Request {
			return model.Request{Tools: tools, ToolsCachePoint: true,
				System:   []model.Block{txt(system), cachePoint},
				Messages: []model.Message{user(txt(msg), cachePoint), assistant(txt("fine")), user(txt("next"))}}
		}
		// everything before the last cachePoint is written: tools 1,210 + system 50 + message 10
		expectUsage(t, "first", r.call(t, req(tools, text("s", 50), text("m", 10))), 1+1, 0, 1210+50+10)
		expectUsage(t, "same again", r.call(t, req(tools, text("s", 50), text("m", 10))), 2, 1270, 0)
		// a new message keeps tools and system: read up to the system's cachePoint
		expectUsage(t, "message changed", r.call(t, req(tools, text("s", 50), text("n", 10))), 2, 1260, 10)
		// a new system keeps the tools: read up to the tools' cachePoint
		expectUsage(t, "system changed", r.call(t, req(tools, text("t", 50), text("n", 10))), 2, 1210, 60)
		// changed tools invalidate everything after them
		changed := []model.ToolSpec{tools[0], tool("c", 600)}
		expectUsage(t, "tools changed", r.call(t, req(changed, text("t", 50), text("n", 10))), 2, 0, 1270)
		// tools in another order are another prefix
		swapped := []model.ToolSpec{tools[1], tools[0]}
		expectUsage(t, "tools reordered", r.call(t, req(swapped, text("t", 50), text("n", 10))), 2, 0, 1270)
	}
}

func TestCacheMinimumPrefix(t *testing.T) {
	for _, tc := range []struct {
		model   string
		minimum int
	}{
		{sonnet, 1024},
		{"anthropic.claude-opus-4-1-20250805-v1:0", 1024},
		{"us.anthropic.claude-haiku-4-5-20251001-v1:0", 4096},
		{"global.anthropic.claude-opus-4-5-20251101-v1:0", 4096},
		{"anthropic.claude-3-5-haiku-20241022-v1:0", 2048},
		{"us.amazon.nova-pro-v1:0", 1000},
		{"test-model", 1024},
	} {
		t.Run(tc.model, func(t *testing.T) {
			if got := conversefake.MinCacheTokens(tc.model); got != int64(tc.minimum) {
				t.Fatalf("MinCacheTokens = %d, want %d", got, tc.minimum)
			}
			r := newCacheRig(t, "", false)
			req := func(n int) model.Request {
				return model.Request{ModelID: tc.model, System: []model.Block{txt(text("s", n)), cachePoint}, Messages: []model.Message{user(txt("hi"))}}
			}
			short := tc.minimum - 1
			expectUsage(t, "below the minimum", r.call(t, req(short)), int64(short)+1, 0, 0)
			expectUsage(t, "below the minimum, again", r.call(t, req(short)), int64(short)+1, 0, 0)
			expectUsage(t, "at the minimum", r.call(t, req(tc.minimum)), 1, 0, int64(tc.minimum))
			expectUsage(t, "at the minimum, again", r.call(t, req(tc.minimum)), 1, int64(tc.minimum), 0)
		})
	}
}

func TestCacheTTLOnTheTestClock(t *testing.T) {
	for _, tc := range []struct {
		ttl  string
		life time.Duration
	}{{"", 5 * time.Minute}, {"5m", 5 * time.Minute}, {"1h", time.Hour}} {
		t.Run("ttl="+tc.ttl, func(t *testing.T) {
			r := newCacheRig(t, "", false)
			req := model.Request{System: []model.Block{txt(text("s", 1100)), {Kind: model.BlockCachePoint, CacheTTL: tc.ttl}},
				Messages: []model.Message{user(txt("hi"))}}
			expectUsage(t, "write", r.call(t, req), 1, 0, 1100)
			r.clock.advance(tc.life - time.Second)
			expectUsage(t, "just within the TTL", r.call(t, req), 1, 1100, 0)
			// the hit renewed the entry: a full TTL less a second later it is still there
			r.clock.advance(tc.life - time.Second)
			expectUsage(t, "within the renewed TTL", r.call(t, req), 1, 1100, 0)
			r.clock.advance(tc.life)
			expectUsage(t, "at the TTL: expired, written again", r.call(t, req), 1, 0, 1100)
		})
	}
	// a 1h entry outlives a 5m one
	r := newCacheRig(t, "", false)
	long := model.Request{System: []model.Block{txt(text("l", 1100)), {Kind: model.BlockCachePoint, CacheTTL: "1h"}}, Messages: []model.Message{user(txt("hi"))}}
	short := model.Request{System: []model.Block{txt(text("s", 1100)), cachePoint}, Messages: []model.Message{user(txt("hi"))}}
	r.call(t, long)
	r.call(t, short)
	r.clock.advance(10 * time.Minute)
	expectUsage(t, "1h after 10 minutes", r.call(t, long), 1, 1100, 0)
	expectUsage(t, "5m after 10 minutes", r.call(t, short), 1, 0, 1100)
}

// conversation is a system prompt of 1,100 tokens and one user message: a text block of 10
// tokens, then extra blocks of 5 tokens each; a cachePoint after the block numbered by each
// of marks (0 the first, extra the last), by default after the last.
func conversation(extra int, marks ...int) model.Request {
	if len(marks) == 0 {
		marks = []int{extra}
	}
	var blocks []model.Block
	for i := 0; i <= extra; i++ {
		if i == 0 {
			blocks = append(blocks, txt(text("u", 10)))
		} else {
			blocks = append(blocks, txt(text(string(rune('a'+i%26)), 5)))
		}
		if slices.Contains(marks, i) {
			blocks = append(blocks, cachePoint)
		}
	}
	return model.Request{System: []model.Block{txt(text("s", 1100))}, Messages: []model.Message{user(blocks...)}}
}

func TestCacheLookBackTwentyBlocks(t *testing.T) {
	// the first call writes the prefix system + the first text block (1,110 tokens)
	r := newCacheRig(t, "", false)
	expectUsage(t, "first", r.call(t, conversation(0)), 0, 0, 1110)
	// a cachePoint 20 blocks further on finds it and writes the 20 blocks after it
	expectUsage(t, "20 blocks on", r.call(t, conversation(20)), 0, 1110, 100)

	r = newCacheRig(t, "", false)
	r.call(t, conversation(0))
	// 21 blocks on, the look-back does not reach it: the whole prefix is written again
	expectUsage(t, "21 blocks on", r.call(t, conversation(21)), 0, 0, 1110+105)

	r = newCacheRig(t, "", false)
	r.call(t, conversation(0))
	// unless the previous cachePoint is kept: it finds its own prefix
	got := r.call(t, conversation(21, 0, 21))
	expectUsage(t, "21 blocks on, the previous cachePoint kept", got, 0, 1110, 105)
}

func TestCacheNeedsAnIdenticalPrefix(t *testing.T) {
	r := newCacheRig(t, "", false)
	hist := func(first string) model.Request {
		return model.Request{System: []model.Block{txt(text("s", 1100))}, Messages: []model.Message{
			user(txt(first)), assistant(txt(text("a", 10))), user(txt(text("b", 10)), cachePoint)}}
	}
	expectUsage(t, "first", r.call(t, hist(text("x", 10))), 0, 0, 1130)
	expectUsage(t, "identical", r.call(t, hist(text("x", 10))), 0, 1130, 0)
	changed := text("x", 10)[:39] + "y"
	expectUsage(t, "one character changed in the first message", r.call(t, hist(changed)), 0, 0, 1130)
	// the same blocks in another message layout are another prefix
	merged := model.Request{System: []model.Block{txt(text("s", 1100))}, Messages: []model.Message{
		user(txt(changed), txt(text("a", 10)), txt(text("b", 10)), cachePoint)}}
	expectUsage(t, "same blocks, other messages", r.call(t, merged), 0, 0, 1130)
}

func TestCacheTwoCachePointsSplitReadAndWrite(t *testing.T) {
	r := newCacheRig(t, "", false)
	req := func(second string) model.Request {
		return model.Request{System: []model.Block{txt(text("s", 1100)), cachePoint, txt(second), cachePoint},
			Messages: []model.Message{user(txt(text("u", 3)))}}
	}
	expectUsage(t, "both written", r.call(t, req(text("a", 200))), 3, 0, 1300)
	expectUsage(t, "both read", r.call(t, req(text("a", 200))), 3, 1300, 0)
	expectUsage(t, "the first read, the second written", r.call(t, req(text("b", 300))), 3, 1100, 300)
	// a second part below the minimum on its own still counts: the minimum is the prefix's
	expectUsage(t, "a short second part", r.call(t, req(text("c", 2))), 3, 1100, 2)
}

func TestCacheIsPerModelAndPerFake(t *testing.T) {
	req := model.Request{System: []model.Block{txt(text("s", 1100)), cachePoint}, Messages: []model.Message{user(txt("hi"))}}
	r := newCacheRig(t, "", false)
	r.call(t, req)
	other := req
	other.ModelID = "us.anthropic.claude-sonnet-4-20250514-v1:0"
	expectUsage(t, "another model id", r.call(t, other), 1, 0, 1100)
	expectUsage(t, "the first model id", r.call(t, req), 1, 1100, 0)
	expectUsage(t, "another fake (account)", newCacheRig(t, "", false).call(t, req), 1, 0, 1100)
}

// Without the option usage stays exactly as scripted, cachePoints or not (zero unless given).
func TestUsageAsScriptedWithoutTheOption(t *testing.T) {
	r := newCacheRig(t, "agent:\n  - text: one\n    usage: {inputTokens: 7, outputTokens: 3, cacheReadInputTokens: 2, cacheWriteInputTokens: 1}\n  - text: two\n", false)
	req := model.Request{System: []model.Block{txt(text("s", 1100)), cachePoint}, Messages: []model.Message{user(txt("hi"), cachePoint)}}
	if got := r.call(t, req); got != (scripted.Usage{InputTokens: 7, OutputTokens: 3, CacheReadInputTokens: 2, CacheWriteInputTokens: 1}) {
		t.Errorf("scripted usage: %+v", got)
	}
	if got := r.call(t, req); got != (scripted.Usage{}) {
		t.Errorf("no usage scripted: %+v", got)
	}
}

// WithUsageEstimate turns the accounting on for a script written without it; its entries'
// usage is ignored.
func TestWithUsageEstimate(t *testing.T) {
	r := newCacheRig(t, "agent:\n  - text: one\n    usage: {inputTokens: 7, outputTokens: 3}\n  - text: two\n", false, conversefake.WithUsageEstimate())
	req := model.Request{System: []model.Block{txt(text("s", 1100)), cachePoint}, Messages: []model.Message{user(txt("hi"))}}
	if got := r.call(t, req); got != (scripted.Usage{InputTokens: 1, OutputTokens: 1, CacheWriteInputTokens: 1100}) {
		t.Errorf("first: %+v", got)
	}
	if got := r.call(t, req); got != (scripted.Usage{InputTokens: 1, OutputTokens: 1, CacheReadInputTokens: 1100}) {
		t.Errorf("second: %+v", got)
	}
}

// A faulted attempt reports no usage and writes nothing: the retry that is answered writes.
func TestCacheFaultedAttemptWritesNothing(t *testing.T) {
	r := newCacheRig(t, "usage: estimate\nagent:\n  - text: ok\nerrors:\n  - {role: agent, call: 0, error: ThrottlingException}\n", false)
	req := model.Request{System: []model.Block{txt(text("s", 1100)), cachePoint}, Messages: []model.Message{user(txt("hi"))}}
	expectUsage(t, "answered after a throttle", r.call(t, req), 1, 0, 1100)
	if recs := r.fake.Requests(); len(recs) != 2 || recs[0].Status != 429 || recs[0].Usage != (scripted.Usage{}) {
		t.Errorf("recorded %+v", recs)
	}
}

// Writes are split by TTL, 1h before 5m, as usage.cacheDetails: each written cachePoint's
// part (from the one before) at its own TTL.
func TestCacheWritesByTTL(t *testing.T) {
	r := newCacheRig(t, "", false)
	req := func(second string) model.Request {
		return model.Request{System: []model.Block{txt(text("s", 1100)), {Kind: model.BlockCachePoint, CacheTTL: "1h"}, txt(second), cachePoint},
			Messages: []model.Message{user(txt("hi"))}}
	}
	expectUsage(t, "both written", r.call(t, req(text("a", 200))), 1, 0, 1300)
	recs := r.fake.Requests()
	if got := recs[len(recs)-1].CacheWrites; !slices.Equal(got, []conversefake.CacheWrite{{TTL: "1h", Tokens: 1100}, {TTL: "5m", Tokens: 200}}) {
		t.Errorf("cache writes %+v", got)
	}
	expectUsage(t, "the 1h part read", r.call(t, req(text("b", 200))), 1, 1100, 200)
	recs = r.fake.Requests()
	if got := recs[len(recs)-1].CacheWrites; !slices.Equal(got, []conversefake.CacheWrite{{TTL: "5m", Tokens: 200}}) {
		t.Errorf("cache writes %+v", got)
	}
	expectUsage(t, "all read", r.call(t, req(text("b", 200))), 1, 1300, 0)
	recs = r.fake.Requests()
	if got := recs[len(recs)-1].CacheWrites; got != nil {
		t.Errorf("cache writes %+v, want none", got)
	}
}

// The SDK itself decodes the answered cacheDetails, from Converse and from ConverseStream's
// metadata event (the adapter does not read them).
func TestCacheDetailsDecodeInTheSDK(t *testing.T) {
	s, err := scripted.Parse("sdk.model.yaml", []byte("usage: estimate\nagent:\n  - text: one\n  - text: two\n"))
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(conversefake.New(s))
	t.Cleanup(hs.Close)
	api := bedrockruntime.New(bedrockruntime.Options{Region: "us-east-1", BaseEndpoint: aws.String(hs.URL),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
	system := func(tag string) []types.SystemContentBlock {
		return []types.SystemContentBlock{
			&types.SystemContentBlockMemberText{Value: text(tag, 1100)},
			&types.SystemContentBlockMemberCachePoint{Value: types.CachePointBlock{Type: types.CachePointTypeDefault, Ttl: types.CacheTTL("1h")}},
		}
	}
	msgs := []types.Message{{Role: types.ConversationRoleUser, Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: "hi"}}}}
	want := []types.CacheDetail{{Ttl: types.CacheTTL("1h"), InputTokens: aws.Int32(1100)}}
	same := func(got []types.CacheDetail) bool {
		return len(got) == 1 && got[0].Ttl == want[0].Ttl && aws.ToInt32(got[0].InputTokens) == 1100
	}
	out, err := api.Converse(context.Background(), &bedrockruntime.ConverseInput{ModelId: aws.String(sonnet), System: system("a"), Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	if !same(out.Usage.CacheDetails) || aws.ToInt32(out.Usage.CacheWriteInputTokens) != 1100 {
		t.Errorf("Converse usage %+v", out.Usage)
	}
	st, err := api.ConverseStream(context.Background(), &bedrockruntime.ConverseStreamInput{ModelId: aws.String(sonnet), System: system("b"), Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	stream := st.GetStream()
	defer stream.Close()
	var usage *types.TokenUsage
	for ev := range stream.Events() {
		if m, ok := ev.(*types.ConverseStreamOutputMemberMetadata); ok {
			usage = m.Value.Usage
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if usage == nil || !same(usage.CacheDetails) {
		t.Errorf("ConverseStream usage %+v", usage)
	}
}
