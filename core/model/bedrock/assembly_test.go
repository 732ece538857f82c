package bedrock

import (
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/archmax-ai/archmax/core/model"
)

func toolStart(i int32, id, name string) types.ConverseStreamOutput {
	return &types.ConverseStreamOutputMemberContentBlockStart{Value: types.ContentBlockStartEvent{ContentBlockIndex: aws.Int32(i),
		Start: &types.ContentBlockStartMemberToolUse{Value: types.ToolUseBlockStart{ToolUseId: aws.String(id), Name: aws.String(name)}}}}
}

func inputDelta(i int32, s string) types.ConverseStreamOutput {
	return &types.ConverseStreamOutputMemberContentBlockDelta{Value: types.ContentBlockDeltaEvent{ContentBlockIndex: aws.Int32(i),
		Delta: &types.ContentBlockDeltaMemberToolUse{Value: types.ToolUseBlockDelta{Input: aws.String(s)}}}}
}

func textDelta(i int32, s string) types.ConverseStreamOutput {
	return &types.ConverseStreamOutputMemberContentBlockDelta{Value: types.ContentBlockDeltaEvent{ContentBlockIndex: aws.Int32(i),
		Delta: &types.ContentBlockDeltaMemberText{Value: s}}}
}

func stop(reason types.StopReason) types.ConverseStreamOutput {
	return &types.ConverseStreamOutputMemberMessageStop{Value: types.MessageStopEvent{StopReason: reason}}
}

func assemble(evs ...types.ConverseStreamOutput) (*model.Response, string, error) {
	var a assembly
	text := ""
	for _, ev := range evs {
		text += a.add(ev)
	}
	resp, err := a.response()
	return resp, text, err
}

// The edges of a streamed answer: blocks by index whatever the arrival order, an empty tool
// input, a stream without messageStop, a tool input that is not JSON.
func TestStreamAssembly(t *testing.T) {
	resp, text, err := assemble(textDelta(0, "Hi "), toolStart(1, "t1", "read_file"), inputDelta(1, `{"b":1,`), textDelta(0, "there"),
		inputDelta(1, `"a":"x"}`), toolStart(2, "t2", "list"), stop(types.StopReasonToolUse))
	if err != nil || text != "Hi there" || len(resp.Message.Content) != 3 || resp.Message.Content[0].Text != "Hi there" ||
		string(resp.Message.Content[1].ToolUse.Input) != `{"a":"x","b":1}` || string(resp.Message.Content[2].ToolUse.Input) != "{}" ||
		resp.StopReason != model.StopToolUse || resp.Usage != nil {
		t.Errorf("%+v %q %v", resp, text, err)
	}

	var ce *model.CallError
	if _, _, err := assemble(textDelta(0, "cut")); !errors.As(err, &ce) || ce.Code != "ModelStreamIncomplete" || !ce.Retryable {
		t.Errorf("no messageStop: %v", err)
	}
	if _, _, err := assemble(toolStart(0, "t1", "read_file"), inputDelta(0, `{"a":`), stop(types.StopReasonToolUse)); !errors.As(err, &ce) || ce.Code != "ModelStreamMalformedToolUse" {
		t.Errorf("broken input: %v", err)
	}
	resp, _, err = assemble(toolStart(0, "t1", "read_file"), inputDelta(0, `{"a":`), stop(types.StopReasonMaxTokens))
	if err != nil || string(resp.Message.Content[0].ToolUse.Input) != "{}" {
		t.Errorf("cut off at max_tokens: %+v %v", resp, err)
	}
}
