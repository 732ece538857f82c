package hostconfig

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
)

// NoFile is Digest's answer for a workspace without a host file.
const NoFile = "none"

// Digest identifies a host file's bytes: their SHA-256 in lower-case hex, or NoFile when src
// is nil (no file). The stack passes the digest of the file it granted and uploaded to the
// functions (ARCHMAX_HOST_FILE_SHA256), which compare it with the file they read.
func Digest(src []byte) string {
	if src == nil {
		return NoFile
	}
	sum := sha256.Sum256(src)
	return hex.EncodeToString(sum[:])
}

// ToolNames are the names the file's tools are called by, in file order: a lambda or http
// entry's name, and each exposed MCP tool's Prefix + As (or Name).
func (c *Config) ToolNames() []string {
	if c == nil {
		return nil
	}
	var out []string
	for _, d := range c.Tools {
		switch {
		case d.Kind == KindMCP && d.MCP != nil:
			for _, t := range d.MCP.Expose {
				out = append(out, d.MCP.ToolName(t))
			}
		case d.Name != "":
			out = append(out, d.Name)
		}
	}
	return out
}

// Resources are the AWS resources and endpoints a host file names: what a deployment must
// grant its functions (the CDK app reads them at synth time) and reach.
type Resources struct {
	// Functions are the Lambda functions lambda tools invoke (lambda:InvokeFunction).
	Functions []LambdaTool
	// Secrets are the Secrets Manager secrets auth blocks read (secretsmanager:GetSecretValue),
	// by name or ARN as the file gives them.
	Secrets []string
	// SigV4 are the services requests are signed for, with the endpoints they are sent to
	// (execute-api:Invoke, bedrock-agentcore:InvokeGateway, …: the grant depends on the
	// service).
	SigV4 []SignedEndpoint
	// Endpoints are the origins (scheme://host[:port]) http and mcp tools call.
	Endpoints []string
	// Buckets are the S3 locations mounts serve: s3:GetObject (and s3:PutObject,
	// s3:DeleteObject when writable) on the key or prefix, s3:ListBucket with that prefix.
	Buckets []BucketAccess
	// EnvVars are the environment variables auth blocks read (local runs).
	EnvVars []string
	// EventBus is the bus outbound notifications go to (events:PutEvents on it alone), by
	// name or ARN as the file gives it; "" when the file publishes none.
	EventBus string
}

// SignedEndpoint is one SigV4-signed endpoint.
type SignedEndpoint struct {
	Service, Region string // Region "" = the function's
	URL             string // the http tool's URL template or the MCP server's URL
	// Method is the http tool's method; "" for an MCP server (every request a POST).
	Method string
}

// BucketAccess is one mount's S3 location.
type BucketAccess struct {
	Bucket, Key string // Key is a prefix ending in '/' for a folder mount
	ReadOnly    bool
}

// Resources lists what the file names, each once, in file order.
func (c *Config) Resources() Resources {
	var r Resources
	if c == nil {
		return r
	}
	add := func(list *[]string, s string) {
		if s != "" && !slices.Contains(*list, s) {
			*list = append(*list, s)
		}
	}
	auth := func(a *Auth, url, method string) {
		switch {
		case a == nil:
		case a.SigV4 != nil:
			e := SignedEndpoint{Service: a.SigV4.Service, Region: a.SigV4.Region, URL: url, Method: method}
			if !slices.Contains(r.SigV4, e) {
				r.SigV4 = append(r.SigV4, e)
			}
		default:
			add(&r.Secrets, a.Secret)
			add(&r.EnvVars, a.Env)
		}
	}
	if c.Events != nil && c.Events.EventBridge != nil {
		r.EventBus = c.Events.EventBridge.Bus
	}
	for _, d := range c.Tools {
		switch {
		case d.Lambda != nil:
			if !slices.Contains(r.Functions, *d.Lambda) {
				r.Functions = append(r.Functions, *d.Lambda)
			}
		case d.HTTP != nil:
			if parts, err := SplitURL(d.HTTP.URL); err == nil {
				add(&r.Endpoints, parts.Origin)
			}
			auth(d.HTTP.Auth, d.HTTP.URL, d.HTTP.Method)
		case d.MCP != nil:
			if parts, err := SplitURL(d.MCP.URL); err == nil {
				add(&r.Endpoints, parts.Origin)
			}
			auth(d.MCP.Auth, d.MCP.URL, "")
		}
	}
	for _, m := range c.Mounts {
		if b, k, ok := m.S3Location(); ok {
			r.Buckets = append(r.Buckets, BucketAccess{Bucket: b, Key: k, ReadOnly: m.ReadOnly})
		}
	}
	return r
}
