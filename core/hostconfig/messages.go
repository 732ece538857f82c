package hostconfig

// The hints of the host file's findings, in one place: each code's general hint, and the
// specific hints of the checks that know better what to do (checks.go, SplitURL, the input
// schema's findings). The tool kinds' refusals carry the same hints (Problem.Hint).

// hints are the fix hints of the codes.
var hints = map[string]string{
	CodeYAML:          "make the file one YAML mapping (version, tools, policyRules, mounts, events, pricing, budgets)",
	CodeUnknownKey:    "remove the key, or check its spelling against docs/schema/host.schema.json",
	CodeType:          "give the value the shape docs/schema/host.schema.json describes",
	CodeRequired:      "add the key",
	CodeVersion:       "write 'version: 1' or leave it out",
	CodeKind:          "give the entry exactly one of 'lambda: { function }', 'http: { method, url }' or 'mcp: { url, expose }'",
	CodeToolName:      "use 1 to 64 of a-z, A-Z, 0-9, '_' and '-' (an MCP tool can be renamed with 'as')",
	CodeToolReserved:  "rename the tool: built-in, control and delegation names belong to the runtime",
	CodeToolDuplicate: "rename one of the tools (an MCP server's with 'prefix' or 'as')",
	CodeInputSchema:   "write the tool's input as a JSON Schema object: { type: object, properties: { … }, required: [ … ] }",
	CodePathArgument:  "declare only arguments of the input schema, each once, with an access of read, list, search, write, remove or execute",
	CodeLambda:        "name the function by its name or ARN, and a version or alias in 'qualifier'",
	CodeURL:           "fix scheme and host in the file (https), and put {arg} placeholders only as whole path segments or query values, each a scalar property of the input schema",
	CodeHTTP:          "use GET, POST, PUT, PATCH or DELETE, body json or none, and headers the transport does not own",
	CodeAuth:          "use 'sigv4: { service, region? }', or 'header' with one of 'secret' (Secrets Manager) and 'env'",
	CodeRule:          "see the policyRules section of docs/schema/host.schema.json",
	CodeMount:         "name the mount outside the reserved roots, and serve it from s3://bucket/prefix/ or a directory",
	CodeMountDir:      hintMountDirMissing,
	CodeEvents:        "name the bus by its name or ARN, and list detail types from 'Session Parked', 'Session Awaiting Input', 'Session Completed', 'Session Failed', 'Session Raised', 'Session Rejected' and 'Session Event'",
	CodeLocal:         "give a stand-in 'answers: [{ whenInput?, result | error }]' (an exposed MCP tool's also 'description' and 'input'), on the lambda or http tool or on each exposed tool",
	CodePricing:       "give the entry a rate in USD per 1M tokens: { input, output, cacheRead?, cacheWrite? }",
	CodeBudget:        "give a limit 'tokens' (a whole number) or 'usd' (an amount), keyed under 'session' or 'workflows.<workflow slug>'",
}

// hintBudgetUnpriced is the fix of a USD budget on a model no pricing entry prices.
const hintBudgetUnpriced = "add a 'pricing' entry for the model (its id, a part of it, or 'default'), or limit the workflow in 'tokens' instead of 'usd'"

// Hints of the http block's headers and of auth blocks.
const (
	hintHeaderName       = "write a header name: letters, digits and !#$%&'*+-.^_`|~ only"
	hintTransportHeader  = "remove the header: the transport sets it (and every call carries its own Idempotency-Key)"
	hintCredentialHeader = "remove the header and authenticate with 'auth': { header: <name>, prefix: \"Bearer \", secret: <a Secrets Manager secret's name or ARN> } (or 'env' for local runs), or 'sigv4: { service }' for an AWS endpoint"
	hintAuthHeaderTwice  = "remove the header from 'headers': 'auth' sets it, from the secret"
	hintSigV4Header      = "remove the header: the SigV4 signer sets X-Amz-Date, X-Amz-Security-Token and X-Amz-Content-Sha256 on every request"
	hintHeaderTwice      = "give the header once"
	hintHeaderValue      = "write the value on one line, without control characters"
	hintHeaderType       = "quote the value: a fixed header is a one-line string (e.g. X-Api-Version: \"2\")"
	hintAuthBoth         = "keep one: 'sigv4: { service }' for an AWS endpoint, or 'header' with 'secret' or 'env'"
	hintAuthHeader       = "write 'sigv4: { service, region? }', or 'header' with 'secret' (Secrets Manager) or 'env' (local runs)"
	hintAuthHeaderName   = "name a header the transport does not own (e.g. Authorization, X-Api-Key)"
	hintAuthSource       = "give exactly one of 'secret' (a Secrets Manager secret's name or ARN) and 'env' (an environment variable, for local runs)"
	hintSecretKey        = "add 'secret' (the JSON secret 'secretKey' picks from), or remove 'secretKey'"
	hintSecretName       = "write the secret's name or ARN (e.g. prod/orders-api), and store its value in Secrets Manager"
	hintAuthPrefix       = "write the prefix on one line (e.g. \"Bearer \")"
	hintSigV4Service     = "name the service the endpoint signs for: execute-api (API Gateway), bedrock-agentcore (an AgentCore Gateway), lambda (a function URL)"
	hintSigV4Region      = "write a region such as eu-west-1, or leave 'region' out to sign for the function's region"
)

// Hints of URL templates (SplitURL) and of their placeholders.
const (
	hintURLFragment    = "remove the '#…' part: a tool's URL has no fragment (the server never receives one)"
	hintURLAbsolute    = "write the whole URL: https://host[:port]/path"
	hintURLScheme      = "use https:// (http:// only to localhost or a loopback address, for local tests)"
	hintURLPlain       = "use https://: plain http:// is taken only to localhost or a loopback address (local tests)"
	hintURLNoHost      = "write the host after the scheme: https://api.example.com/…"
	hintURLUserInfo    = "remove the user info: credentials go in 'auth' (a header with a secret, or sigv4)"
	hintURLHostArg     = "write the host out: placeholders go only in whole path segments or whole query values"
	hintURLHostEscape  = "write the host plainly, without '%' escapes or '\\'"
	hintURLHost        = "write a host name or an IP address (IPv6 in brackets: https://[::1]:8443/)"
	hintURLPort        = "use a port from 1 to 65535, or leave it out"
	hintURLChars       = "percent-encode spaces, control and non-ASCII characters (each UTF-8 byte as %XX: é is %C3%A9)"
	hintURLSegmentArg  = "make the placeholder a segment of its own: /orders/{id}/notes, not /orders/ord-{id}"
	hintURLDotSegment  = "write the path as the server resolves it, without '.' or '..' segments (encoded or not)"
	hintURLSegment     = "percent-encode the segment's reserved characters (a space is %20, a '%' is %25), and keep '/' and '\\' out of it, encoded or not"
	hintURLQueryKey    = "write the key literally and put the placeholder in the value: ?q={term}"
	hintURLQueryValue  = "make the placeholder the whole value: ?q={term}, not ?q=x{term}"
	hintURLQueryEscape = "percent-encode the query's reserved characters (a space is %20, a '%' is %25)"
	hintURLArgTwice    = "use each argument once: declare another property for a second value"
	hintURLArgUnknown  = "add the property to 'input' with a scalar type, or fix the placeholder's name"
	hintURLArgType     = "give the property type string, number, integer or boolean; structured arguments go in the body (body: json)"
	hintURLArgUntyped  = "add 'type: string' (or number, integer, boolean) to the property"
	hintURLArgRequired = "add the argument to the input's 'required' list, or make it a query value (?%s={%s}), which a call may leave out"
	hintMCPURLArgs     = "write the server's URL out in full: an MCP server's address does not depend on the call"
)

// Hints of the input schemas' findings.
const (
	hintSchemaType    = "write one of the JSON Schema type names, or a list of them: string, number, integer, boolean, object, array, null"
	hintSchemaRegex   = "write a regular expression Go's RE2 reads (no lookaround or backreferences; escape '\\' in YAML double quotes, or use single quotes)"
	hintSchemaRef     = "point '$ref' inside the input schema ('#/$defs/<name>'): an input schema refers only to itself"
	hintSchemaGeneral = "fix the keyword's value as JSON Schema (draft 2020-12) defines it"
)

// Hints of a mount's local dir (LocalMountProblem).
const (
	hintMountNoDir        = "add 'dir: <a folder of its own>' (relative to the workspace root, or absolute) for local runs; 's3' alone is served only by the deployed functions"
	hintMountDirPlace     = "point 'dir' at a folder of its own outside the workspace's workflows/, skills/, .platform/, AGENTS.md, archmax.host.yaml, .env and the session store (.archmax/ or --store), e.g. ../contracts or ./data/contracts — through links too"
	hintMountDirMissing   = "create the folder (or file), or fix 'dir': it is resolved against the workspace root on the machine that runs the workspace"
	hintMountFileFolder   = "remove 'file: true' to mount the folder, or point 'dir' at one file"
	hintMountFolderFile   = "add 'file: true' to mount one file, or point 'dir' at a folder"
	hintMountFileWritable = "remove 'readOnly: false': a local file mount is read-only (mount its folder to write)"
)
