package bedrock

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go/transport/http/protocol/restjson1"

	"github.com/archmax-ai/archmax/core/model"
)

// EnvStreaming is the variable both assemblies read (StreamingFromEnv): "0" or "false"
// answers every call through Converse, "1", "true" or unset through ConverseStream.
const EnvStreaming = "ARCHMAX_STREAMING"

// StreamingFromEnv reads EnvStreaming through getenv: whether model calls stream (the
// default) and an error for a value that is not 1, true, 0 or false.
func StreamingFromEnv(getenv func(string) string) (bool, error) {
	switch v := strings.ToLower(strings.TrimSpace(getenv(EnvStreaming))); v {
	case "", "1", "true":
		return true, nil
	case "0", "false":
		return false, nil
	default:
		return true, fmt.Errorf("%s=%q is not 1, true, 0 or false", EnvStreaming, v)
	}
}

// streamErrorStatus is the HTTP status Bedrock gives each exception ConverseStream can
// send inside the stream (research D.6; the frame itself carries none).
var streamErrorStatus = map[string]int{
	"InternalServerException":     500,
	"ModelStreamErrorException":   424,
	"ValidationException":         400,
	"ThrottlingException":         429,
	"ServiceUnavailableException": 503,
}

// ConverseStream sends req to Bedrock ConverseStream and hands each piece of the answer's
// text to onDelta as it arrives (model.StreamClient); with Config.NoStreaming it is
// Converse. The request is sanitised and checked exactly as for Converse, and nothing is
// sent for a refused one.
//
// The answer is assembled from the stream: text blocks from their deltas, each toolUse from
// its contentBlockStart (id, name) and the JSON fragments of its deltas, the stop reason from
// messageStop, usage (the inclusive input total, as Converse) and latency from metadata.
// Retries — the SDK's retryer on the opening response, then ours on a stream that fails —
// happen only while no stream event has arrived: once the model has begun to answer, a
// failure is the call's *model.CallError, whatever the pieces onDelta already received. A
// stream that ends without messageStop fails with Code "ModelStreamIncomplete"
// (retryable), a toolUse whose input does not assemble into a JSON object (unless the answer
// stopped at max_tokens, where the engine drops the call) with "ModelStreamMalformedToolUse".
func (c *Client) ConverseStream(ctx context.Context, req *model.Request, onDelta func(model.Delta)) (resp *model.Response, err error) {
	if c.noStreaming {
		return c.Converse(ctx, req)
	}
	defer c.called(ctx, time.Now())(&err)
	r, in, err := prepare(req)
	if err != nil {
		return nil, err
	}
	callCtx, cancel := c.bound(ctx)
	defer cancel()
	sin := streamInput(in)
	var attempts atomic.Int32
	for {
		resp, started, err := c.streamOnce(callCtx, sin, onDelta, &attempts)
		if err == nil {
			resp.ModelID = r.ModelID
			return resp, nil
		}
		var ce *model.CallError
		if !errors.As(err, &ce) {
			ce = c.failed(ctx, callCtx, err, int(attempts.Load()))
			if ce.Status == 0 {
				ce.Status = streamErrorStatus[ce.Code]
			}
		}
		ce.Attempts = int(attempts.Load())
		n := int(attempts.Load())
		if started || !ce.Retryable || n >= c.maxAttempts || callCtx.Err() != nil {
			return nil, ce
		}
		delay, derr := c.retryer.RetryDelay(n, err)
		if derr != nil {
			return nil, ce
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-callCtx.Done():
			t.Stop()
			return nil, c.failed(ctx, callCtx, errors.Join(err, callCtx.Err()), n)
		}
	}
}

// streamOnce makes one ConverseStream request and reads its stream to the end. started
// reports whether any stream event arrived.
func (c *Client) streamOnce(ctx context.Context, in *bedrockruntime.ConverseStreamInput, onDelta func(model.Delta), attempts *atomic.Int32) (resp *model.Response, started bool, err error) {
	out, err := c.api.ConverseStream(ctx, in, func(o *bedrockruntime.Options) {
		o.APIOptions = append(o.APIOptions, countAttempts(attempts), c.observeThrottles)
		// smithy-go's restJson1 protocol keeps one event-stream codec, payload buffer
		// included, per client: two streams read at once on the client would decode into
		// the same buffer. Each stream gets a protocol of its own (New ignores its schema).
		o.Protocol = restjson1.New(nil)
	})
	if err != nil {
		return nil, false, err
	}
	stream := out.GetStream()
	defer stream.Close()
	var a assembly
	for ev := range stream.Events() {
		started = true
		if text := a.add(ev); text != "" && onDelta != nil {
			onDelta(model.Delta{Text: text})
		}
	}
	if err := stream.Err(); err != nil {
		if c.onThrottle != nil && throttled(err) { // an in-stream exception passes no middleware
			c.onThrottle(ctx)
		}
		if ctx.Err() != nil {
			err = errors.Join(err, ctx.Err())
		}
		return nil, started, err
	}
	if ctx.Err() != nil { // the events ended because the request was cut
		return nil, started, ctx.Err()
	}
	resp, err = a.response()
	return resp, started, err
}

// assembly is an answer being put together from its stream events.
type assembly struct {
	blocks    []*streamBlock // by contentBlockIndex
	stopped   bool
	stop      string
	usage     *types.TokenUsage
	latencyMs int64
}

type streamBlock struct {
	tool     bool
	id, name string
	text     strings.Builder // text, or the toolUse input's JSON fragments
}

func (a *assembly) block(index *int32) *streamBlock {
	i := int(aws.ToInt32(index))
	if i < 0 || i > 1<<16 {
		i = len(a.blocks)
	}
	for len(a.blocks) <= i {
		a.blocks = append(a.blocks, nil)
	}
	if a.blocks[i] == nil {
		a.blocks[i] = &streamBlock{}
	}
	return a.blocks[i]
}

// add takes one event in and returns the text it carried ("" for any other event).
func (a *assembly) add(ev types.ConverseStreamOutput) string {
	switch v := ev.(type) {
	case *types.ConverseStreamOutputMemberContentBlockStart:
		if tu, ok := v.Value.Start.(*types.ContentBlockStartMemberToolUse); ok {
			b := a.block(v.Value.ContentBlockIndex)
			b.tool, b.id, b.name = true, aws.ToString(tu.Value.ToolUseId), aws.ToString(tu.Value.Name)
		}
	case *types.ConverseStreamOutputMemberContentBlockDelta:
		switch d := v.Value.Delta.(type) {
		case *types.ContentBlockDeltaMemberText:
			b := a.block(v.Value.ContentBlockIndex)
			if !b.tool {
				b.text.WriteString(d.Value)
				return d.Value
			}
		case *types.ContentBlockDeltaMemberToolUse:
			if b := a.block(v.Value.ContentBlockIndex); b.tool {
				b.text.WriteString(aws.ToString(d.Value.Input))
			}
		}
	case *types.ConverseStreamOutputMemberMessageStop:
		a.stopped, a.stop = true, string(v.Value.StopReason)
	case *types.ConverseStreamOutputMemberMetadata:
		a.usage = v.Value.Usage
		if m := v.Value.Metrics; m != nil {
			a.latencyMs = aws.ToInt64(m.LatencyMs)
		}
	}
	return ""
}

// response is the assembled answer, as Converse would have returned it.
func (a *assembly) response() (*model.Response, error) {
	if !a.stopped {
		return nil, &model.CallError{Code: "ModelStreamIncomplete", Status: 500, Retryable: true,
			Message: "the model's answer stream ended before its messageStop event"}
	}
	resp := &model.Response{Message: model.Message{Role: model.RoleAssistant}, StopReason: a.stop,
		Usage: usageOf(a.usage), LatencyMs: a.latencyMs}
	for _, b := range slices.DeleteFunc(a.blocks, func(b *streamBlock) bool { return b == nil }) {
		if !b.tool {
			if b.text.Len() > 0 {
				resp.Message.Content = append(resp.Message.Content, model.Block{Kind: model.BlockText, Text: b.text.String()})
			}
			continue
		}
		input, err := toolInput(b.text.String())
		if err != nil {
			if a.stop != model.StopMaxTokens {
				return nil, &model.CallError{Code: "ModelStreamMalformedToolUse", Status: 500,
					Message: fmt.Sprintf("the input of toolUse %s (%s) did not assemble into a JSON object: %v", b.id, b.name, err)}
			}
			input = json.RawMessage("{}") // cut off: the engine drops the call
		}
		resp.Message.Content = append(resp.Message.Content, model.Block{Kind: model.BlockToolUse,
			ToolUse: &model.ToolUse{ID: b.id, Name: b.name, Input: input}})
	}
	return resp, nil
}

// toolInput is a toolUse input assembled from its fragments, rendered as Converse's decoded
// document is (documentJSON): compact, keys sorted, number literals kept; none is {}.
func toolInput(s string) (json.RawMessage, error) {
	if strings.TrimSpace(s) == "" {
		return json.RawMessage("{}"), nil
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("text after the JSON object")
	}
	if v == nil {
		return json.RawMessage("{}"), nil
	}
	return json.Marshal(v)
}

// streamInput is the ConverseStream form of a mapped Converse request.
func streamInput(in *bedrockruntime.ConverseInput) *bedrockruntime.ConverseStreamInput {
	return &bedrockruntime.ConverseStreamInput{
		ModelId:         in.ModelId,
		System:          in.System,
		Messages:        in.Messages,
		ToolConfig:      in.ToolConfig,
		InferenceConfig: in.InferenceConfig,
		RequestMetadata: in.RequestMetadata,
	}
}
