package conversefake

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// BenchmarkCacheAccount400 measures the fake's own cost of the accounting: decoding is not
// counted, only flattening and the cache lookup of one request of 400 messages (200 tool
// calls and their 2 KB results), a system prompt, 20 tools and three cachePoints.
func BenchmarkCacheAccount400(b *testing.B) {
	var msgs []string
	result := strings.Repeat("r", 2048)
	msgs = append(msgs, `{"role":"user","content":[{"text":"start"}]}`)
	for i := range 200 {
		msgs = append(msgs,
			fmt.Sprintf(`{"role":"assistant","content":[{"toolUse":{"toolUseId":"tu-%d","name":"read_file","input":{"file_path":"f%d"}}}]}`, i, i),
			fmt.Sprintf(`{"role":"user","content":[{"toolResult":{"toolUseId":"tu-%d","content":[{"text":%q}]}}`+cacheIf(i == 199)+`]}`, i, result))
	}
	var tools []string
	for i := range 20 {
		tools = append(tools, fmt.Sprintf(`{"toolSpec":{"name":"t%d","description":"%s","inputSchema":{"json":{"type":"object"}}}}`, i, strings.Repeat("d", 400)))
	}
	tools = append(tools, `{"cachePoint":{"type":"default"}}`)
	raw := `{"system":[{"text":"` + strings.Repeat("s", 8000) + `"},{"cachePoint":{"type":"default"}}],"toolConfig":{"tools":[` +
		strings.Join(tools, ",") + `]},"messages":[` + strings.Join(msgs, ",") + `]}`
	var req wireRequest
	if err := json.Unmarshal([]byte(raw), &req); err != nil {
		b.Fatal(err)
	}
	cache := promptCache{}
	now := time.Unix(0, 0)
	cache.account("m", flatten(&req), now)
	b.ResetTimer()
	for range b.N {
		if u, _ := cache.account("m", flatten(&req), now); u.CacheReadInputTokens == 0 {
			b.Fatal("no hit")
		}
	}
}

func cacheIf(ok bool) string {
	if ok {
		return `,{"cachePoint":{"type":"default"}}`
	}
	return ""
}
