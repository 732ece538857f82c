package hosttool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/archmax-ai/archmax/core/hostconfig"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// ArgumentsError: a call's arguments do not match the tool's input schema; the tool did not
// run. Its text is what the model reads as the error result.
type ArgumentsError struct {
	Tool, Detail string
}

func (e *ArgumentsError) Error() string {
	return fmt.Sprintf("Error: the arguments of '%s' do not match its input schema (%s); nothing was sent. Fix the arguments and call it again.", e.Tool, e.Detail)
}

// TimeoutError: a call did not finish within the tool's timeout.
type TimeoutError struct {
	Tool  string
	After time.Duration
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("Error: '%s' did not answer within %s; it may or may not have acted. Calling it again is safe only if it is idempotent.", e.Tool, e.After)
}

// compileSchema compiles a tool's input schema (a JSON Schema object) as the parser does
// (hostconfig.CompileSchema: no loader, so a schema — an MCP server's too — never makes the
// runtime read a URL or a file).
func compileSchema(raw json.RawMessage) (*jsonschema.Schema, error) {
	if len(raw) == 0 {
		raw = json.RawMessage(`{"type":"object"}`)
	}
	return hostconfig.CompileSchema(raw)
}

// jsonValue is v as the schema library reads JSON (numbers as json.Number-compatible
// values): a round trip through encoding/json.
func jsonValue(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	out, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return v
	}
	return out
}

var english = message.NewPrinter(language.English)

// schemaDetail is a validation failure in one line: the first problems with their places.
func schemaDetail(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	var parts []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			at := "/" + strings.Join(e.InstanceLocation, "/")
			parts = append(parts, at+": "+e.ErrorKind.LocalizedString(english))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	if len(parts) > 3 {
		parts = append(parts[:3], fmt.Sprintf("and %d more", len(parts)-3))
	}
	return strings.Join(parts, "; ")
}
