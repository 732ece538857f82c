package conversefake

import (
	"encoding/json"
	"fmt"
	"slices"
)

// The Converse REST-JSON request body, as much of it as the fake reads.
type wireRequest struct {
	Messages        []wireMessage     `json:"messages"`
	System          []wireBlock       `json:"system"`
	ToolConfig      *wireToolConfig   `json:"toolConfig"`
	RequestMetadata map[string]string `json:"requestMetadata"`
}

type wireMessage struct {
	Role    string      `json:"role"`
	Content []wireBlock `json:"content"`
}

// wireBlock is a content-block union; members lists every member present on the wire so
// the rules can insist on exactly one.
type wireBlock struct {
	members    []string
	Text       *string
	ToolUse    *wireToolUse
	ToolResult *wireToolResult
	CachePoint *wireCachePoint
}

func (b *wireBlock) UnmarshalJSON(data []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	for name, raw := range m {
		b.members = append(b.members, name)
		var err error
		switch name {
		case "text":
			err = json.Unmarshal(raw, &b.Text)
		case "toolUse":
			err = json.Unmarshal(raw, &b.ToolUse)
		case "toolResult":
			err = json.Unmarshal(raw, &b.ToolResult)
		case "cachePoint":
			err = json.Unmarshal(raw, &b.CachePoint)
		}
		if err != nil {
			return fmt.Errorf("content block member %s: %w", name, err)
		}
	}
	slices.Sort(b.members)
	return nil
}

type wireToolUse struct {
	ToolUseID string          `json:"toolUseId"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
}

type wireToolResult struct {
	ToolUseID string                  `json:"toolUseId"`
	Content   []wireToolResultContent `json:"content"`
	Status    string                  `json:"status"`
}

type wireToolResultContent struct {
	Text *string         `json:"text"`
	JSON json.RawMessage `json:"json"`
}

type wireCachePoint struct {
	Type string `json:"type"`
	TTL  string `json:"ttl"`
}

type wireToolConfig struct {
	Tools []wireTool `json:"tools"`
}

type wireTool struct {
	ToolSpec   *wireToolSpec   `json:"toolSpec"`
	CachePoint *wireCachePoint `json:"cachePoint"`
}

type wireToolSpec struct {
	Name        string  `json:"name"`
	Description *string `json:"description"`
	InputSchema struct {
		JSON json.RawMessage `json:"json"`
	} `json:"inputSchema"`
}

// The Converse response body.
type wireResponse struct {
	Output struct {
		Message struct {
			Role    string         `json:"role"`
			Content []wireOutBlock `json:"content"`
		} `json:"message"`
	} `json:"output"`
	StopReason string    `json:"stopReason"`
	Usage      wireUsage `json:"usage"`
	Metrics    struct {
		LatencyMs int64 `json:"latencyMs"`
	} `json:"metrics"`
}

type wireOutBlock struct {
	Text    *string         `json:"text,omitempty"`
	ToolUse *wireOutToolUse `json:"toolUse,omitempty"`
}

type wireOutToolUse struct {
	ToolUseID string          `json:"toolUseId"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
}

type wireUsage struct {
	InputTokens           int64 `json:"inputTokens"`
	OutputTokens          int64 `json:"outputTokens"`
	TotalTokens           int64 `json:"totalTokens"`
	CacheReadInputTokens  int64 `json:"cacheReadInputTokens"`
	CacheWriteInputTokens int64 `json:"cacheWriteInputTokens"`
	// CacheDetails: the writes by TTL, 1h before 5m; absent when nothing was written
	CacheDetails []wireCacheDetail `json:"cacheDetails,omitempty"`
}

type wireCacheDetail struct {
	TTL         string `json:"ttl"`
	InputTokens int64  `json:"inputTokens"`
}
