// Package hosttool turns the tool declarations of a host file (core/hostconfig) into the
// engine's host tools (session.HostTool): the kinds live in the subpackages lambdatool,
// httptool and mcptool, each a Builder; Build runs the right one per declaration and wraps
// every tool with what all kinds share — the arguments checked against the declared input
// schema before anything leaves the process (a failure is an error result the model can
// correct), the call's timeout, and the idempotency key every request carries.
//
// Governance runs before a host tool's handler is ever called (the engine's kernel), and a
// case's mocks intercept after governance, so nothing here decides who may call what.
package hosttool

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/archmax-ai/archmax/core/hostconfig"
	"github.com/archmax-ai/archmax/core/session"
)

// Deps are what the tool kinds need from the host process. A nil field makes the kinds that
// need it fail to build with an error naming it.
type Deps struct {
	// Lambda invokes functions (lambdatool.SDKInvoker adapts the AWS SDK's *lambda.Client).
	Lambda LambdaInvoker
	// HTTP is the client of http and mcp tools (nil = a client with the tool's timeout and
	// no redirects to another host).
	HTTP *http.Client
	// Secret resolves an Auth's secret value: a Secrets Manager secret (optionally one key of
	// a JSON secret) or an environment variable. Cached by the caller as it sees fit.
	Secret func(ctx context.Context, auth *hostconfig.Auth) (string, error)
	// Sign signs an HTTP request with SigV4 for service in region (nil when no AWS
	// credentials are configured).
	Sign func(ctx context.Context, req *http.Request, body []byte, service, region string) error
}

// Builder builds the host tools of one declaration of its kind.
type Builder func(ctx context.Context, decl hostconfig.ToolDecl, deps Deps) ([]session.HostTool, error)

// Build builds every declared tool with the builder of its kind (kinds maps a Kind to its
// Builder: the assembly passes lambdatool.New, httptool.New and mcptool.New). Errors name
// the declaration (its name and line).
func Build(ctx context.Context, cfg *hostconfig.Config, kinds map[string]Builder, deps Deps) ([]session.HostTool, error) {
	if cfg == nil {
		return nil, nil
	}
	var out []session.HostTool
	for i, d := range cfg.Tools {
		b := kinds[d.Kind]
		if b == nil {
			return nil, fmt.Errorf("%s:%d: tool '%s': kind %q is not available in this host", hostconfig.File, d.Line, d.Name, d.Kind)
		}
		tools, err := b(ctx, d, deps)
		var p *hostconfig.Problem
		switch {
		case errors.As(err, &p):
			// a static refusal the parser makes too (a declaration that did not come
			// through Load): located and hinted as `archmax validate` reports it
			return nil, &BuildError{Tool: d.Name, Line: d.Line, Column: d.Column, Field: fmt.Sprintf("tools.%d.%s", i, p.Field), Problem: p}
		case err != nil:
			return nil, fmt.Errorf("%s:%d: tool '%s': %w", hostconfig.File, d.Line, d.Name, err)
		}
		for _, t := range tools {
			w, err := wrap(d, t)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: tool '%s': %w", hostconfig.File, d.Line, t.Name, err)
			}
			out = append(out, w)
		}
	}
	return out, nil
}

// BuildError is a declaration a kind refuses for a static reason (a *hostconfig.Problem):
// the entry's position, the field's path and the problem's hint, as the parser says it.
type BuildError struct {
	Tool         string
	Line, Column int
	Field        string
	Problem      *hostconfig.Problem
}

func (e *BuildError) Error() string {
	return fmt.Sprintf("%s:%d:%d: tool '%s': %s [%s] (hint: %s)", hostconfig.File, e.Line, e.Column, e.Tool, e.Problem.Message, e.Field, e.Problem.Hint)
}

func (e *BuildError) Unwrap() error { return e.Problem }

// wrap gives a kind's tool what every host tool shares: its arguments checked against its
// input schema before the kind's handler runs — a mismatch is answered as an error result
// naming the problem, so the model can correct the call and nothing leaves the process —
// and the declaration's timeout (DefaultTimeout when unset) on the call's context.
func wrap(d hostconfig.ToolDecl, t session.HostTool) (session.HostTool, error) {
	schema, err := compileSchema(t.InputSchema)
	if err != nil {
		return t, fmt.Errorf("its input schema does not compile: %w", err)
	}
	timeout := d.Timeout
	if timeout <= 0 {
		timeout = hostconfig.DefaultTimeout
	}
	run := t.Handler
	t.Handler = func(ctx context.Context, call session.HostCall) (string, error) {
		args := any(map[string]any{})
		if call.Args != nil {
			args = jsonValue(call.Args)
		}
		if err := schema.Validate(args); err != nil {
			return "", &ArgumentsError{Tool: t.Name, Detail: schemaDetail(err)}
		}
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		text, err := run(ctx, call)
		if err != nil && ctx.Err() == context.DeadlineExceeded {
			return "", &TimeoutError{Tool: t.Name, After: timeout}
		}
		return text, err
	}
	return t, nil
}

// LambdaInvoker is the part of the Lambda API a lambda tool uses.
type LambdaInvoker interface {
	Invoke(ctx context.Context, functionName, qualifier string, payload []byte) (result []byte, functionError string, err error)
}
