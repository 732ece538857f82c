package main

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/jsii-runtime-go"

	"github.com/archmax-ai/archmax/core/hostconfig"
)

// HostGrants are the permissions a host file's resources need (hostconfig.Config.Resources):
// exactly what it names, nothing beyond it.
//
//   - lambda tools: lambda:InvokeFunction on the function — its ARN (a name in this account
//     and region, a partial ARN in its account), qualified when the tool names a qualifier:
//     Lambda checks the qualified ARN.
//   - secrets (a header's `secret`): secretsmanager:GetSecretValue on the secret — an ARN as
//     given (a partial ARN, one without the six-character suffix, gets `-??????`), a name in
//     this account and region with `-??????` for the suffix Secrets Manager adds. No
//     kms:Decrypt: a secret under the default aws/secretsmanager key needs none (the key
//     policy admits calls through Secrets Manager); one under a customer-managed key needs
//     the key's policy to admit the roles (DECISIONS S19-4).
//   - SigV4: for execute-api, execute-api:Invoke on the tool's route of the API its URL names
//     (<api-id>.execute-api.<region>.amazonaws.com) in this account — the method, the path
//     with each {placeholder} as '*', under the first path segment as the stage (a REST API,
//     an HTTP API's named stage) and under $default with the whole path (an HTTP API's default
//     stage): one of the two is the API's, the other names nothing; for bedrock-agentcore,
//     bedrock-agentcore:InvokeGateway on the gateway its URL names
//     (<gateway-id>.gateway.bedrock-agentcore.<region>.amazonaws.com) in this account. Any
//     other service, or a URL that names no API or gateway (a custom domain), is granted
//     nothing, and said so as a synth warning.
//   - events.eventBridge: events:PutEvents on the bus — an ARN as given, a name in this
//     account and region (a bus the stack creates, infra/stack.go notificationsBus) — and on
//     nothing else.
//   - mounts with s3: s3:GetObject on the key (a file mount) or under the prefix, s3:ListBucket
//     on the bucket for that s3:prefix only, and — for a writable mount — s3:PutObject and
//     s3:DeleteObject there too (the file tools write, move and remove files).
//
// An auth block reading an environment variable (`env`, for local runs) is warned about: the
// functions have no such variable.
type HostGrants struct {
	Statements []awsiam.PolicyStatement
	Warnings   []string
}

var (
	executeAPIHost = regexp.MustCompile(`^([a-z0-9]+)\.execute-api\.([a-z]{2}(?:-gov)?-[a-z]+-\d)\.amazonaws\.com(?:\.cn)?$`)
	gatewayHost    = regexp.MustCompile(`^([a-z0-9][a-z0-9-]*)\.gateway\.bedrock-agentcore\.([a-z]{2}(?:-gov)?-[a-z]+-\d)\.amazonaws\.com$`)
	secretSuffix   = regexp.MustCompile(`-[A-Za-z0-9]{6}$`)
)

// NewHostGrants reads the grants off cfg (nil: none) for roles of stack.
func NewHostGrants(stack awscdk.Stack, cfg *hostconfig.Config) HostGrants {
	var g HostGrants
	if cfg == nil {
		return g
	}
	r := cfg.Resources()
	allow := func(actions []string, resources []*string, cond map[string]any) {
		if len(resources) == 0 {
			return
		}
		p := &awsiam.PolicyStatementProps{Actions: jsii.Strings(actions...), Resources: &resources}
		if cond != nil {
			p.Conditions = &cond
		}
		g.Statements = append(g.Statements, awsiam.NewPolicyStatement(p))
	}
	var functions []*string
	for _, f := range r.Functions {
		functions = append(functions, functionArn(stack, f))
	}
	allow([]string{"lambda:InvokeFunction"}, functions, nil)

	var secrets []*string
	for _, s := range r.Secrets {
		switch {
		case strings.HasPrefix(s, "arn:") && secretSuffix.MatchString(s):
			secrets = append(secrets, jsii.String(s))
		case strings.HasPrefix(s, "arn:"):
			secrets = append(secrets, jsii.String(s+"-??????"))
		default:
			secrets = append(secrets, stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String("secretsmanager"), Resource: jsii.String("secret"),
				ResourceName: jsii.String(s + "-??????"), ArnFormat: awscdk.ArnFormat_COLON_RESOURCE_NAME}))
		}
	}
	allow([]string{"secretsmanager:GetSecretValue"}, secrets, nil)

	var invoke, gateways []*string
	seen := map[string]bool{} // two URLs of one route (a query string apart) grant it once
	once := func(key string) bool {
		if seen[key] {
			return false
		}
		seen[key] = true
		return true
	}
	for _, e := range r.SigV4 {
		parts, err := hostconfig.SplitURL(e.URL)
		u, uerr := url.Parse(parts.Origin)
		if err != nil || uerr != nil {
			continue // the parser refused it already
		}
		host := u.Hostname()
		switch e.Service {
		case "execute-api":
			m := executeAPIHost.FindStringSubmatch(host)
			if m == nil {
				g.Warnings = append(g.Warnings, fmt.Sprintf("%s is signed for execute-api, but %s names no API (<api-id>.execute-api.<region>.amazonaws.com): "+
					"no execute-api:Invoke is granted for it; grant it to the functions' roles yourself", e.URL, host))
				continue
			}
			method := e.Method
			if method == "" {
				method = "POST" // an MCP server: every request is a POST
			}
			var segs []string
			for _, p := range parts.Path {
				if p.Arg != "" {
					segs = append(segs, "*")
				} else {
					segs = append(segs, p.Literal)
				}
			}
			api := func(rest string) *string {
				if !once("execute-api " + m[2] + " " + m[1] + "/" + rest) {
					return nil
				}
				return stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String("execute-api"), Region: jsii.String(m[2]),
					Resource: jsii.String(m[1]), ResourceName: jsii.String(rest), ArnFormat: awscdk.ArnFormat_SLASH_RESOURCE_NAME})
			}
			stage, path := "", ""
			if len(segs) > 0 {
				stage, path = segs[0], strings.Join(segs[1:], "/")
			}
			var arns []*string
			if stage != "" {
				arns = append(arns, api(stage+"/"+method+"/"+path))
			}
			arns = append(arns, api("$default/"+method+"/"+strings.Join(segs, "/")))
			for _, arn := range arns {
				if arn != nil {
					invoke = append(invoke, arn)
				}
			}
		case "bedrock-agentcore":
			m := gatewayHost.FindStringSubmatch(host)
			if m == nil {
				g.Warnings = append(g.Warnings, fmt.Sprintf("%s is signed for bedrock-agentcore, but %s names no AgentCore Gateway "+
					"(<gateway-id>.gateway.bedrock-agentcore.<region>.amazonaws.com): no bedrock-agentcore:InvokeGateway is granted for it; "+
					"grant it to the functions' roles yourself", e.URL, host))
				continue
			}
			if !once("gateway " + m[2] + " " + m[1]) {
				continue
			}
			gateways = append(gateways, stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String("bedrock-agentcore"), Region: jsii.String(m[2]),
				Resource: jsii.String("gateway"), ResourceName: jsii.String(m[1]), ArnFormat: awscdk.ArnFormat_SLASH_RESOURCE_NAME}))
		default:
			g.Warnings = append(g.Warnings, fmt.Sprintf("%s is signed for %s: the stack grants only execute-api and bedrock-agentcore endpoints; "+
				"grant what %s requires to the functions' roles yourself", e.URL, e.Service, e.Service))
		}
	}
	allow([]string{"execute-api:Invoke"}, invoke, nil)
	allow([]string{"bedrock-agentcore:InvokeGateway"}, gateways, nil)

	if r.EventBus != "" {
		allow([]string{"events:PutEvents"}, []*string{NotificationsBusArn(stack, r.EventBus)}, nil)
	}

	for _, b := range r.Buckets {
		object := b.Key
		if strings.HasSuffix(b.Key, "/") {
			object += "*"
		}
		arn := func(key string) *string {
			return stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String("s3"), Region: jsii.String(""), Account: jsii.String(""),
				Resource: jsii.String(b.Bucket), ResourceName: jsii.String(key), ArnFormat: awscdk.ArnFormat_SLASH_RESOURCE_NAME})
		}
		bucket := stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String("s3"), Region: jsii.String(""), Account: jsii.String(""),
			Resource: jsii.String(b.Bucket), ArnFormat: awscdk.ArnFormat_NO_RESOURCE_NAME})
		allow([]string{"s3:GetObject"}, []*string{arn(object)}, nil)
		if !b.ReadOnly {
			allow([]string{"s3:DeleteObject", "s3:PutObject"}, []*string{arn(object)}, nil)
		}
		allow([]string{"s3:ListBucket"}, []*string{bucket}, map[string]any{"StringLike": map[string]any{"s3:prefix": []string{object}}})
	}

	for _, v := range r.EnvVars {
		g.Warnings = append(g.Warnings, fmt.Sprintf("a tool's auth reads the environment variable %s, which the functions do not have (it is for local runs): "+
			"on AWS name a Secrets Manager secret instead (auth: { header, secret })", v))
	}
	return g
}

// functionArn is the ARN lambda:InvokeFunction is checked on for a lambda tool's function:
// a name (optionally name:qualifier) in this account and region, a partial ARN
// (<account>:function:<name>) in its account and this region, a full ARN as given; then
// :<qualifier> when the tool names one.
func functionArn(stack awscdk.Stack, f hostconfig.LambdaTool) *string {
	name := f.Function
	if f.Qualifier != "" {
		name += ":" + f.Qualifier
	}
	if strings.HasPrefix(name, "arn:") {
		return jsii.String(name)
	}
	account := awscdk.Aws_ACCOUNT_ID()
	if acct, rest, ok := strings.Cut(name, ":function:"); ok {
		account, name = jsii.String(acct), rest
	}
	return stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String("lambda"), Account: account, Resource: jsii.String("function"),
		ResourceName: jsii.String(name), ArnFormat: awscdk.ArnFormat_COLON_RESOURCE_NAME})
}

// NotificationsBusArn is the ARN of the host file's outbound bus: an ARN as given, a name
// in this account and region.
func NotificationsBusArn(stack awscdk.Stack, bus string) *string {
	if strings.HasPrefix(bus, "arn:") {
		return jsii.String(bus)
	}
	return stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String("events"), Resource: jsii.String("event-bus"),
		ResourceName: jsii.String(bus), ArnFormat: awscdk.ArnFormat_SLASH_RESOURCE_NAME})
}
