package bedrock

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	smithydocument "github.com/aws/smithy-go/document"

	"github.com/archmax-ai/archmax/core/model"
)

// toInput maps a validated request onto ConverseInput.
func toInput(r *model.Request) (*bedrockruntime.ConverseInput, error) {
	in := &bedrockruntime.ConverseInput{ModelId: aws.String(r.ModelID)}
	for _, b := range r.System {
		if b.Kind == model.BlockCachePoint {
			in.System = append(in.System, &types.SystemContentBlockMemberCachePoint{Value: cachePoint(b.CacheTTL)})
		} else {
			in.System = append(in.System, &types.SystemContentBlockMemberText{Value: b.Text})
		}
	}
	for _, m := range r.Messages {
		msg := types.Message{Role: types.ConversationRole(m.Role)}
		for _, b := range m.Content {
			cb, err := toBlock(b)
			if err != nil {
				return nil, err
			}
			msg.Content = append(msg.Content, cb)
		}
		in.Messages = append(in.Messages, msg)
	}
	if len(r.Tools) > 0 {
		tc := &types.ToolConfiguration{}
		at := r.ToolsCachePointIndex()
		for k, t := range r.Tools {
			if r.ToolsCachePoint && k == at {
				tc.Tools = append(tc.Tools, &types.ToolMemberCachePoint{Value: cachePoint(r.CacheTTL)})
			}
			schema, err := jsonDocument(t.InputSchema)
			if err != nil {
				return nil, fmt.Errorf("bedrock: tool %s input schema: %w", t.Name, err)
			}
			spec := types.ToolSpecification{Name: aws.String(t.Name), InputSchema: &types.ToolInputSchemaMemberJson{Value: schema}}
			if t.Description != "" {
				spec.Description = aws.String(t.Description)
			}
			tc.Tools = append(tc.Tools, &types.ToolMemberToolSpec{Value: spec})
		}
		if r.ToolsCachePoint && at == len(r.Tools) {
			tc.Tools = append(tc.Tools, &types.ToolMemberCachePoint{Value: cachePoint(r.CacheTTL)})
		}
		in.ToolConfig = tc
	}
	if r.MaxTokens > 0 || r.Temperature != nil {
		ic := &types.InferenceConfiguration{}
		if r.MaxTokens > 0 {
			ic.MaxTokens = aws.Int32(int32(min(r.MaxTokens, 1<<31-1)))
		}
		if r.Temperature != nil {
			ic.Temperature = aws.Float32(float32(*r.Temperature))
		}
		in.InferenceConfig = ic
	}
	if len(r.Metadata) > 0 {
		in.RequestMetadata = r.Metadata
	}
	return in, nil
}

func toBlock(b model.Block) (types.ContentBlock, error) {
	switch b.Kind {
	case model.BlockToolUse:
		input, err := jsonDocument(b.ToolUse.Input)
		if err != nil {
			return nil, fmt.Errorf("bedrock: toolUse %s input: %w", b.ToolUse.ID, err)
		}
		return &types.ContentBlockMemberToolUse{Value: types.ToolUseBlock{
			ToolUseId: aws.String(b.ToolUse.ID), Name: aws.String(b.ToolUse.Name), Input: input,
		}}, nil
	case model.BlockToolResult:
		tr := b.ToolResult
		res := types.ToolResultBlock{ToolUseId: aws.String(tr.ToolUseID), Content: []types.ToolResultContentBlock{}}
		if tr.Content != "" {
			res.Content = append(res.Content, &types.ToolResultContentBlockMemberText{Value: tr.Content})
		}
		if tr.Status != "" {
			res.Status = types.ToolResultStatus(tr.Status)
		}
		return &types.ContentBlockMemberToolResult{Value: res}, nil
	case model.BlockCachePoint:
		return &types.ContentBlockMemberCachePoint{Value: cachePoint(b.CacheTTL)}, nil
	default:
		return &types.ContentBlockMemberText{Value: b.Text}, nil
	}
}

func cachePoint(ttl string) types.CachePointBlock {
	return types.CachePointBlock{Type: types.CachePointTypeDefault, Ttl: types.CacheTTL(ttl)}
}

// jsonDocument turns a JSON value into a Smithy document, keeping number literals exact
// (encoding/json's json.Number would be encoded as a string).
func jsonDocument(raw json.RawMessage) (document.Interface, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return document.NewLazyDocument(mapNumbers(v, func(n string) any { return smithydocument.Number(n) })), nil
}

// fromOutput maps ConverseOutput onto a model.Response.
func fromOutput(out *bedrockruntime.ConverseOutput) (*model.Response, error) {
	resp := &model.Response{Message: model.Message{Role: model.RoleAssistant}, StopReason: string(out.StopReason)}
	if msg, ok := out.Output.(*types.ConverseOutputMemberMessage); ok {
		for _, cb := range msg.Value.Content {
			switch b := cb.(type) {
			case *types.ContentBlockMemberText:
				resp.Message.Content = append(resp.Message.Content, model.Block{Kind: model.BlockText, Text: b.Value})
			case *types.ContentBlockMemberToolUse:
				input, err := documentJSON(b.Value.Input)
				if err != nil {
					return nil, fmt.Errorf("bedrock: toolUse %s input: %w", aws.ToString(b.Value.ToolUseId), err)
				}
				resp.Message.Content = append(resp.Message.Content, model.Block{Kind: model.BlockToolUse, ToolUse: &model.ToolUse{
					ID: aws.ToString(b.Value.ToolUseId), Name: aws.ToString(b.Value.Name), Input: input,
				}})
			}
		}
	}
	resp.Usage = usageOf(out.Usage)
	if out.Metrics != nil {
		resp.LatencyMs = aws.ToInt64(out.Metrics.LatencyMs)
	}
	return resp, nil
}

// usageOf maps Bedrock's token usage (nil when none was reported) with the inclusive input
// total: Bedrock's inputTokens excludes prompt-cache reads and writes, so both are added back.
func usageOf(u *types.TokenUsage) *model.Usage {
	if u == nil {
		return nil
	}
	read, write := int64(aws.ToInt32(u.CacheReadInputTokens)), int64(aws.ToInt32(u.CacheWriteInputTokens))
	return &model.Usage{
		InputTokens:      int64(aws.ToInt32(u.InputTokens)) + read + write,
		OutputTokens:     int64(aws.ToInt32(u.OutputTokens)),
		CacheReadTokens:  read,
		CacheWriteTokens: write,
	}
}

// documentJSON renders a decoded Smithy document as JSON. The decoder yields numbers as
// smithy document.Number (a string type that encoding/json would quote), so they are turned
// into json.Number first; a missing input becomes {}.
func documentJSON(d document.Interface) (json.RawMessage, error) {
	if d == nil {
		return json.RawMessage("{}"), nil
	}
	var v any
	if err := d.UnmarshalSmithyDocument(&v); err != nil {
		return nil, err
	}
	if v == nil {
		return json.RawMessage("{}"), nil
	}
	return json.Marshal(mapNumbers(v, func(n string) any { return json.Number(n) }))
}

// mapNumbers replaces, in place, every json.Number or smithy document.Number in the decoded
// JSON value v by conv of its literal text.
func mapNumbers(v any, conv func(string) any) any {
	switch x := v.(type) {
	case json.Number:
		return conv(string(x))
	case smithydocument.Number:
		return conv(string(x))
	case map[string]any:
		for k, e := range x {
			x[k] = mapNumbers(e, conv)
		}
	case []any:
		for i, e := range x {
			x[i] = mapNumbers(e, conv)
		}
	}
	return v
}
