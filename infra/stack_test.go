package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/archmax-ai/archmax/core/hostconfig"
)

// The stack is synthesized once per configuration (each synth costs seconds); every test
// reads the same template.
var (
	testCfg   Config
	testStack *Stack
	tmpl      assertions.Template
	tmplJSON  map[string]any
	outdir    string // the main variant's cloud assembly (its assets)
	jwtTmpl   assertions.Template
	jwtJSON   map[string]any
)

// testWorkspace is the workspace the main variant deploys: testdata/workspace (its host
// file names every kind of grant) copied with what an upload must never carry added.
func testWorkspace(dir string) *Workspace {
	must(os.CopyFS(dir, os.DirFS("testdata/workspace")))
	for name, content := range map[string]string{
		".env": "TICKETS_TOKEN=secret\n", "skills/orders/.env.local": "X=1\n", ".archmax/sessions/s1/head.json": "{}",
		"node_modules/x/index.js": "x", "skills/orders/node_modules/y.js": "y", ".git/config": "[core]",
		"workflows/desk/.DS_Store": "x", "workflows/desk/.env": "Y=2\n",
	} {
		must(os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		must(os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	must(os.Symlink("AGENTS.md", filepath.Join(dir, "skills", "orders", "linked.md")))
	w, err := ReadWorkspace(dir)
	must(err)
	return w
}

const testProfile = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"

var testModels = []string{"amazon.nova-lite-v1:0", "arn:aws:bedrock:eu-west-1:123456789012:application-inference-profile/abc123"}

func TestMain(m *testing.M) {
	os.Setenv("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
	code := func() int {
		defer jsii.Close()
		build, err := os.MkdirTemp("", "archmax-infra-build-")
		if err != nil {
			panic(err)
		}
		defer os.RemoveAll(build)
		outdir = filepath.Join(build, "cdk.out")
		ws := testWorkspace(filepath.Join(build, "workspace"))
		defer ws.Close()
		for _, fn := range FunctionNames {
			must(os.MkdirAll(filepath.Join(build, fn), 0o755))
			must(os.WriteFile(filepath.Join(build, fn, "bootstrap"), []byte("#!/bin/sh\n# "+fn+"\n"), 0o755))
		}
		testCfg = Config{
			Stage: "test", Model: testProfile, Models: testModels,
			SpecPrefix: "specs/", SessionPrefix: "sessions/",
			EventRoutes: []EventRoute{
				{Source: "orders.app", DetailType: "Order Placed", Workflow: "fulfil", Trigger: "order"},
				{Source: "hr.app", Workflow: "onboard"},
				{Source: "orders.app", DetailType: "Order Placed", Workflow: "audit"}, // same pattern: one rule
			},
			DeliverySources:  []string{"archmax.delivery", "payments.app"},
			LogRetentionDays: 30,
			BuildDir:         build,
			IAMAdmins:        []string{"arn:aws:iam::123456789012:role/ops"},
			IAMDeciders:      []string{"arn:aws:iam::123456789012:role/approvers", "arn:aws:iam::123456789012:user/bob"},
			FourEyes:         true,
			SessionTTL:       "30d",
			EventPutters:     []string{"210987654321", "arn:aws:iam::210987654321:role/partner-events"},
			Workspace:        ws,
			Ops: Operations{AlarmTopicARN: testAlarmTopic, ReservedConcurrency: map[string]int{FnTurn: 20, FnWake: 5},
				APIThrottleRate: 25, APIThrottleBurst: 50},
		}
		must(testCfg.Check())
		testStack = NewStack(awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(outdir)}), testCfg)
		tmpl = assertions.Template_FromStack(testStack.Stack, nil)
		b, err := json.Marshal(tmpl.ToJSON())
		must(err)
		must(json.Unmarshal(b, &tmplJSON))

		jwtCfg := testCfg
		jwtCfg.JWTIssuer, jwtCfg.JWTAudience = "https://issuer.example.com/", []string{"archmax-api"}
		jwtCfg.JWTScopePrefix, jwtCfg.IAMAdmins, jwtCfg.IAMDeciders, jwtCfg.EventPutters = DefaultJWTScopePrefix, nil, nil, nil
		jwtCfg.Workspace = nil    // and no workspace: no host grants, no upload
		jwtCfg.Ops = Operations{} // and the default operations: no alarm topic, unreserved, default throttling
		must(jwtCfg.Check())
		jwtTmpl = assertions.Template_FromStack(NewStack(awscdk.NewApp(nil), jwtCfg).Stack, nil)
		b, err = json.Marshal(jwtTmpl.ToJSON())
		must(err)
		must(json.Unmarshal(b, &jwtJSON))
		return m.Run()
	}()
	os.Exit(code)
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// check runs an assertion, turning its panic (how assertions reports a mismatch) into a
// test failure that names what was checked.
func check(t *testing.T, what string, assert func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s: %v", what, r)
		}
	}()
	assert()
}

// resources returns the template's resources of type typ by logical id.
func resources(typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, r := range tmplJSON["Resources"].(map[string]any) {
		if r := r.(map[string]any); r["Type"] == typ {
			out[id] = r
		}
	}
	return out
}

func props(r map[string]any) map[string]any { p, _ := r["Properties"].(map[string]any); return p }

// only returns the logical id of the one resource of type typ.
func only(t *testing.T, typ string) string {
	t.Helper()
	rs := resources(typ)
	if len(rs) != 1 {
		t.Fatalf("%d resources of type %s, want 1", len(rs), typ)
	}
	for id := range rs {
		return id
	}
	return ""
}

// render writes a CloudFormation value as a string: Ref → ${X}, GetAtt → ${X.Attr},
// Join → the joined parts; anything else as JSON.
func render(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case map[string]any:
		if ref, ok := v["Ref"].(string); ok && len(v) == 1 {
			return "${" + ref + "}"
		}
		if ga, ok := v["Fn::GetAtt"].([]any); ok && len(v) == 1 {
			return "${" + ga[0].(string) + "." + ga[1].(string) + "}"
		}
		if j, ok := v["Fn::Join"].([]any); ok && len(v) == 1 {
			var parts []string
			for _, p := range j[1].([]any) {
				parts = append(parts, render(p))
			}
			return strings.Join(parts, j[0].(string))
		}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func strs(v any) []string {
	switch v := v.(type) {
	case nil:
		return nil
	case []any:
		var out []string
		for _, e := range v {
			out = append(out, render(e))
		}
		return out
	default:
		return []string{render(v)}
	}
}

// functionIDs maps function name → logical id of its AWS::Lambda::Function.
func functionIDs(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for id, r := range resources("AWS::Lambda::Function") {
		if cdkHelper(id) {
			continue
		}
		name, _ := props(r)["FunctionName"].(string)
		fn, ok := strings.CutPrefix(name, "archmax-test-")
		if !ok {
			t.Fatalf("function %s is named %q, want archmax-test-<fn>", id, name)
		}
		out[fn] = id
	}
	return out
}

// cdkHelper reports whether a logical id is one of CDK's own helpers: the bucket
// deployment's handler (the workspace upload) and the bucket's auto-delete handler.
func cdkHelper(id string) bool {
	return strings.HasPrefix(id, "CustomCDKBucketDeployment") || strings.HasPrefix(id, "CustomS3AutoDeleteObjects")
}

func TestFunctions(t *testing.T) {
	check(t, "six functions and the upload's handler", func() { tmpl.ResourceCountIs(jsii.String("AWS::Lambda::Function"), jsii.Number(7)) })
	check(t, "six functions without a workspace", func() { jwtTmpl.ResourceCountIs(jsii.String("AWS::Lambda::Function"), jsii.Number(6)) })
	if ids := functionIDs(t); len(ids) != 6 {
		t.Errorf("functions %v, want the six", ids)
	}
	for _, fn := range FunctionNames {
		check(t, fn+": provided.al2023 on arm64 from its bootstrap", func() {
			tmpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
				"FunctionName":  "archmax-test-" + fn,
				"Runtime":       "provided.al2023",
				"Architectures": []any{"arm64"},
				"Handler":       "bootstrap",
				"Code":          assertions.Match_ObjectLike(&map[string]any{"S3Key": assertions.Match_StringLikeRegexp(jsii.String(`\.zip$`))}),
				"LoggingConfig": assertions.Match_ObjectLike(&map[string]any{"LogGroup": assertions.Match_AnyValue()}),
			})
		})
		check(t, fn+": its log group keeps 30 days", func() {
			tmpl.HasResourceProperties(jsii.String("AWS::Logs::LogGroup"), map[string]any{
				"LogGroupName": "/aws/lambda/archmax-test-" + fn, "RetentionInDays": 30,
			})
		})
	}
	ids := functionIDs(t)
	// each function runs its own bootstrap (the test's dummies differ per function, so do their
	// assets) and logs to its own group
	keys := map[string]string{}
	logGroups := map[string]string{} // log group name -> logical id
	for id, r := range resources("AWS::Logs::LogGroup") {
		name, _ := props(r)["LogGroupName"].(string)
		logGroups[name] = id
	}
	for fn, id := range ids {
		p := props(resources("AWS::Lambda::Function")[id])
		key := render(p["Code"].(map[string]any)["S3Key"])
		if other, dup := keys[key]; dup {
			t.Errorf("%s and %s run the same code asset %s", fn, other, key)
		}
		keys[key] = fn
		lc, _ := p["LoggingConfig"].(map[string]any)
		if got, want := render(lc["LogGroup"]), "${"+logGroups["/aws/lambda/archmax-test-"+fn]+"}"; got != want {
			t.Errorf("%s logs to %s, want its own group %s", fn, got, want)
		}
	}
	for fn, id := range ids {
		timeout := props(resources("AWS::Lambda::Function")[id])["Timeout"]
		want := 900.0
		if fn == FnSessions {
			want = 30
		}
		if timeout != want {
			t.Errorf("%s: timeout %v, want %v", fn, timeout, want)
		}
	}
}

// TestEnvironment: every function gets exactly the variables its code reads, named as
// functions/handlers/assembly and functions/handlers/starts name them.
func TestEnvironment(t *testing.T) {
	known := goConstants(t, "../functions/handlers/assembly/config.go")
	for _, src := range []string{"../functions/handlers/starts/starts.go", "../functions/handlers/stream/functionurl.go"} {
		for k, v := range goConstants(t, src) {
			known[k] = v
		}
	}
	names := map[string]bool{}
	for _, v := range known {
		names[v] = true
	}
	fns := resources("AWS::Lambda::Function")
	ids := functionIDs(t)
	schedulerRole := schedulerRoleID(t)
	base := append([]string{EnvBucket, EnvModel, EnvSessionPrefix, EnvSpecPrefix, EnvTable}, EndpointVars...)
	writers := append(slices.Clone(base), EnvSchedulerGroup, EnvSchedulerRoleARN, EnvSchedulerDLQARN, EnvWakeTargetARN, EnvHostFileSHA256, EnvSessionTTL)
	roles := []string{EnvIAMAdmins, EnvIAMDeciders} // the HTTP functions, under IAM authorization
	want := map[string][]string{
		FnTurn:     append(slices.Concat(writers, roles), EnvEventRoutes),
		FnDecide:   append(slices.Concat(writers, roles), EnvFourEyes),
		FnDeliver:  slices.Concat(writers, roles),
		FnWake:     writers,
		FnSessions: slices.Concat(base, roles),
		FnStream:   slices.Concat(writers, roles),
	}
	for fn, id := range ids {
		vars := props(fns[id])["Environment"].(map[string]any)["Variables"].(map[string]any)
		var got []string
		for k := range vars {
			got = append(got, k)
			if !names[k] {
				t.Errorf("%s: %s is not a variable the functions read", fn, k)
			}
		}
		sort.Strings(got)
		w := slices.Clone(want[fn])
		sort.Strings(w)
		if !slices.Equal(got, w) {
			t.Errorf("%s: environment %v, want %v", fn, got, w)
		}
		if got, want := render(vars[EnvTable]), "${"+only(t, "AWS::DynamoDB::Table")+"}"; got != want {
			t.Errorf("%s: %s = %s, want %s", fn, EnvTable, got, want)
		}
		if got, want := render(vars[EnvBucket]), "${"+only(t, "AWS::S3::Bucket")+"}"; got != want {
			t.Errorf("%s: %s = %s, want %s", fn, EnvBucket, got, want)
		}
		if AccessOf[fn].Host && vars[EnvHostFileSHA256] != hostFileDigest(t) {
			t.Errorf("%s: %s = %v, want the SHA-256 of testdata/workspace/%s", fn, EnvHostFileSHA256, vars[EnvHostFileSHA256], hostconfig.File)
		}
		if vars[EnvModel] != testProfile || vars[EnvSpecPrefix] != "specs/" || vars[EnvSessionPrefix] != "sessions/" {
			t.Errorf("%s: model/prefixes %v %v %v", fn, vars[EnvModel], vars[EnvSpecPrefix], vars[EnvSessionPrefix])
		}
		if slices.Contains(HTTPFunctions, fn) && (vars[EnvIAMAdmins] != "arn:aws:iam::123456789012:role/ops" ||
			vars[EnvIAMDeciders] != "arn:aws:iam::123456789012:role/approvers,arn:aws:iam::123456789012:user/bob") {
			t.Errorf("%s: IAM role holders %v / %v", fn, vars[EnvIAMAdmins], vars[EnvIAMDeciders])
		}
		if fn == FnDecide && vars[EnvFourEyes] != "1" {
			t.Errorf("%s: %s = %v", fn, EnvFourEyes, vars[EnvFourEyes])
		}
		if AccessOf[fn].Schedules {
			if got, want := render(vars[EnvWakeTargetARN]), "arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:archmax-test-wake"; got != want {
				t.Errorf("%s: %s = %s, want %s", fn, EnvWakeTargetARN, got, want)
			}
			if got, want := render(vars[EnvSchedulerRoleARN]), "${"+schedulerRole+".Arn}"; got != want {
				t.Errorf("%s: %s = %s, want %s", fn, EnvSchedulerRoleARN, got, want)
			}
			if got, want := render(vars[EnvSchedulerDLQARN]), "${"+queueID(t, "schedules-dlq")+".Arn}"; got != want {
				t.Errorf("%s: %s = %s, want %s", fn, EnvSchedulerDLQARN, got, want)
			}
			if vars[EnvSchedulerGroup] != "archmax-test" {
				t.Errorf("%s: %s = %v", fn, EnvSchedulerGroup, vars[EnvSchedulerGroup])
			}
		}
	}
	var routes []EventRoute
	must(json.Unmarshal([]byte(props(fns[ids[FnTurn]])["Environment"].(map[string]any)["Variables"].(map[string]any)[EnvEventRoutes].(string)), &routes))
	if !slices.Equal(routes, testCfg.EventRoutes) {
		t.Errorf("%s = %v, want %v", EnvEventRoutes, routes, testCfg.EventRoutes)
	}
	// the names this package uses are the assembly's
	for name, value := range map[string]string{"EnvTable": EnvTable, "EnvBucket": EnvBucket, "EnvSpecPrefix": EnvSpecPrefix,
		"EnvSessionPrefix": EnvSessionPrefix, "EnvModel": EnvModel, "EnvSchedulerGroup": EnvSchedulerGroup,
		"EnvWakeTargetARN": EnvWakeTargetARN, "EnvSchedulerRoleARN": EnvSchedulerRoleARN, "EnvEventRoutes": EnvEventRoutes,
		"EnvJWTScopePrefix": EnvJWTScopePrefix, "EnvIAMAdmins": EnvIAMAdmins, "EnvIAMDeciders": EnvIAMDeciders, "EnvFourEyes": EnvFourEyes,
		"EnvHostFileSHA256": EnvHostFileSHA256, "EnvSchedulerDLQARN": EnvSchedulerDLQARN,
		"EnvDynamoDBEndpoint": EnvDynamoDBEndpoint, "EnvS3Endpoint": EnvS3Endpoint, "EnvBedrockEndpoint": EnvBedrockEndpoint} {
		if known[name] != value {
			t.Errorf("%s = %q here, %q in functions/handlers", name, value, known[name])
		}
	}
	// with a JWT authorizer: the scope prefix instead of IAM role holders, on the HTTP functions only
	for id, r := range jwtJSON["Resources"].(map[string]any) {
		r := r.(map[string]any)
		if r["Type"] != "AWS::Lambda::Function" {
			continue
		}
		fn := strings.TrimPrefix(props(r)["FunctionName"].(string), "archmax-test-")
		vars := props(r)["Environment"].(map[string]any)["Variables"].(map[string]any)
		_, hasPrefix := vars[EnvJWTScopePrefix]
		_, hasAdmins := vars[EnvIAMAdmins]
		if _, ok := vars[EnvHostFileSHA256]; ok {
			t.Errorf("no workspace, %s: %s is set", fn, EnvHostFileSHA256)
		}
		if hasPrefix != slices.Contains(HTTPFunctions, fn) || (hasPrefix && vars[EnvJWTScopePrefix] != "archmax/") || hasAdmins {
			t.Errorf("JWT variant, %s (%s): %s = %v, %s present %v", fn, id, EnvJWTScopePrefix, vars[EnvJWTScopePrefix], EnvIAMAdmins, hasAdmins)
		}
	}
}

// TestTable: the table as core/store/dynamodb.CreateTable creates it (its constants read
// from the source), on demand, with PITR and TTL.
func TestTable(t *testing.T) {
	c := goConstants(t, "../core/store/dynamodb/dynamodb.go")
	for name, value := range map[string]string{"attrPK": AttrPK, "attrSK": AttrSK, "attrTTL": AttrTTL, "attrParkKey": AttrParkKey,
		"attrParkDue": AttrParkDue, "attrListKey": AttrListKey, "attrListSort": AttrListSort, "attrOwnerKey": AttrOwnerKey,
		"indexByParkDue": IndexByParkDue, "indexByUpdated": IndexByUpdated, "indexByOwner": IndexByOwner} {
		if c[name] != value {
			t.Errorf("%s = %q here, %q in core/store/dynamodb", name, value, c[name])
		}
	}
	key := func(hash, rng string) []any {
		return []any{map[string]any{"AttributeName": hash, "KeyType": "HASH"}, map[string]any{"AttributeName": rng, "KeyType": "RANGE"}}
	}
	attrs := []any{}
	for _, a := range []string{AttrPK, AttrSK, AttrParkKey, AttrParkDue, AttrListKey, AttrListSort, AttrOwnerKey} {
		attrs = append(attrs, map[string]any{"AttributeName": a, "AttributeType": "S"})
	}
	check(t, "table", func() {
		tmpl.ResourceCountIs(jsii.String("AWS::DynamoDB::Table"), jsii.Number(1))
		tmpl.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), map[string]any{
			"KeySchema":                        key(AttrPK, AttrSK),
			"AttributeDefinitions":             assertions.Match_ArrayWith(&attrs),
			"BillingMode":                      "PAY_PER_REQUEST",
			"PointInTimeRecoverySpecification": map[string]any{"PointInTimeRecoveryEnabled": true},
			"TimeToLiveSpecification":          map[string]any{"AttributeName": AttrTTL, "Enabled": true},
			"GlobalSecondaryIndexes": []any{
				map[string]any{"IndexName": IndexByParkDue, "KeySchema": key(AttrParkKey, AttrParkDue), "Projection": map[string]any{"ProjectionType": "ALL"}},
				map[string]any{"IndexName": IndexByUpdated, "KeySchema": key(AttrListKey, AttrListSort), "Projection": map[string]any{"ProjectionType": "ALL"}},
				map[string]any{"IndexName": IndexByOwner, "KeySchema": key(AttrOwnerKey, AttrListSort), "Projection": map[string]any{"ProjectionType": "ALL"}},
			},
		})
		tmpl.HasResource(jsii.String("AWS::DynamoDB::Table"), map[string]any{"DeletionPolicy": "Retain"})
	})
	if n := len(props(resources("AWS::DynamoDB::Table")[only(t, "AWS::DynamoDB::Table")])["AttributeDefinitions"].([]any)); n != 7 {
		t.Errorf("%d attribute definitions, want 7", n)
	}
}

func TestBucket(t *testing.T) {
	check(t, "bucket: versioned, encrypted, public access blocked", func() {
		tmpl.ResourceCountIs(jsii.String("AWS::S3::Bucket"), jsii.Number(1))
		tmpl.HasResourceProperties(jsii.String("AWS::S3::Bucket"), map[string]any{
			"VersioningConfiguration": map[string]any{"Status": "Enabled"},
			"BucketEncryption": map[string]any{"ServerSideEncryptionConfiguration": []any{
				map[string]any{"ServerSideEncryptionByDefault": map[string]any{"SSEAlgorithm": "AES256"}},
			}},
			"PublicAccessBlockConfiguration": map[string]any{
				"BlockPublicAcls": true, "BlockPublicPolicy": true, "IgnorePublicAcls": true, "RestrictPublicBuckets": true,
			},
		})
		tmpl.HasResourceProperties(jsii.String("AWS::S3::BucketPolicy"), map[string]any{
			"PolicyDocument": map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{map[string]any{
				"Effect": "Deny", "Action": "s3:*", "Condition": map[string]any{"Bool": map[string]any{"aws:SecureTransport": "false"}},
				"Principal": map[string]any{"AWS": "*"}, "Resource": assertions.Match_AnyValue(),
			}})},
		})
	})
}

// openAPIRoutes reads the route keys ("POST /v1/…") of docs/openapi.yaml.
func openAPIRoutes(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("../docs/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pathRe, methodRe := regexp.MustCompile(`^  (/\S*):\s*$`), regexp.MustCompile(`^    (get|post|put|patch|delete):`)
	var out []string
	path := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if m := pathRe.FindStringSubmatch(line); m != nil {
			// the document's file {path} holds slashes: API Gateway's greedy {path+}
			path = strings.Replace(m[1], "/files/{path}", "/files/{path+}", 1)
		} else if !strings.HasPrefix(line, " ") {
			path = ""
		} else if m := methodRe.FindStringSubmatch(line); m != nil && path != "" {
			out = append(out, strings.ToUpper(m[1])+" "+path)
		}
	}
	sort.Strings(out)
	return out
}

// TestRoutes: the API's routes are exactly docs/openapi.yaml's, each on its function with
// IAM authorization (JWT when configured).
// routeFunction is which function serves each route (DESIGN.md §1, the functions' mains).
var routeFunction = map[string]string{
	"POST /v1/workflows/{workflow}/sessions":                   "turn",
	"POST /v1/workflows/{workflow}/sessions/{sessionId}/turns": "turn",
	"POST /v1/sessions/{sessionId}/decision":                   "decide",
	"POST /v1/sessions/{sessionId}/deliveries":                 "deliver",
	"DELETE /v1/sessions/{sessionId}":                          "decide",
	"GET /v1/sessions":                                         "sessions",
	"GET /v1/sessions/{sessionId}":                             "sessions",
	"GET /v1/sessions/{sessionId}/messages":                    "sessions",
	"GET /v1/sessions/{sessionId}/events":                      "sessions",
	"GET /v1/sessions/{sessionId}/artifacts/{name}":            "sessions",
	"GET /v1/sessions/{sessionId}/files/{path+}":               "sessions",
}

func TestRoutes(t *testing.T) {
	want := openAPIRoutes(t)
	if len(want) == 0 {
		t.Fatal("no routes read from docs/openapi.yaml")
	}
	routes := resources("AWS::ApiGatewayV2::Route")
	integrations := resources("AWS::ApiGatewayV2::Integration")
	ids := functionIDs(t)
	var got []string
	for id, r := range routes {
		p := props(r)
		key := p["RouteKey"].(string)
		got = append(got, key)
		if p["AuthorizationType"] != "AWS_IAM" {
			t.Errorf("route %s (%s): authorization %v, want AWS_IAM", key, id, p["AuthorizationType"])
		}
		target := render(p["Target"])
		integ, ok := strings.CutPrefix(target, "integrations/${")
		integ = strings.TrimSuffix(integ, "}")
		if !ok || integrations[integ] == nil {
			t.Errorf("route %s: target %s is no integration", key, target)
			continue
		}
		ip := props(integrations[integ])
		fn := routeFunction[key] // written out here, not read from the stack's own table
		if got, want := render(ip["IntegrationUri"]), "${"+ids[fn]+".Arn}"; got != want || ip["PayloadFormatVersion"] != "2.0" || ip["IntegrationType"] != "AWS_PROXY" {
			t.Errorf("route %s: integration %s %v %v, want %s (functions/%s) AWS_PROXY 2.0", key, got, ip["IntegrationType"], ip["PayloadFormatVersion"], want, fn)
		}
	}
	sort.Strings(got)
	if !slices.Equal(got, want) {
		t.Errorf("routes %v\nwant (docs/openapi.yaml) %v", got, want)
	}
	check(t, "API, default stage", func() {
		tmpl.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Api"), map[string]any{"Name": "archmax-test", "ProtocolType": "HTTP"})
		tmpl.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Stage"), map[string]any{"StageName": "$default", "AutoDeploy": true})
		tmpl.ResourceCountIs(jsii.String("AWS::ApiGatewayV2::Authorizer"), jsii.Number(0))
	})
	check(t, "JWT variant: one JWT authorizer on every route", func() {
		jwtTmpl.ResourceCountIs(jsii.String("AWS::ApiGatewayV2::Authorizer"), jsii.Number(1))
		jwtTmpl.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Authorizer"), map[string]any{
			"AuthorizerType": "JWT", "IdentitySource": []any{"$request.header.Authorization"},
			"JwtConfiguration": map[string]any{"Audience": []any{"archmax-api"}, "Issuer": "https://issuer.example.com/"},
		})
		jwtTmpl.AllResourcesProperties(jsii.String("AWS::ApiGatewayV2::Route"), map[string]any{"AuthorizationType": "JWT", "AuthorizerId": assertions.Match_AnyValue()})
		jwtTmpl.ResourceCountIs(jsii.String("AWS::ApiGatewayV2::Route"), jsii.Number(float64(len(want))))
	})
	// JWT: the gateway itself refuses a decision from a token that may not decide; no other
	// route names scopes (the functions check the rest against the session)
	for _, r := range jwtJSON["Resources"].(map[string]any) {
		r := r.(map[string]any)
		if r["Type"] != "AWS::ApiGatewayV2::Route" {
			continue
		}
		key, scopes := props(r)["RouteKey"].(string), strs(props(r)["AuthorizationScopes"])
		want := []string(nil)
		if key == "POST /v1/sessions/{sessionId}/decision" {
			want = []string{"archmax/decide", "archmax/admin"}
		}
		if !slices.Equal(scopes, want) {
			t.Errorf("JWT route %s: authorization scopes %v, want %v", key, scopes, want)
		}
	}
	for _, r := range resources("AWS::ApiGatewayV2::Route") {
		if s := props(r)["AuthorizationScopes"]; s != nil {
			t.Errorf("IAM route %v names scopes %v", props(r)["RouteKey"], s)
		}
	}
}

func schedulerRoleID(t *testing.T) string {
	t.Helper()
	var ids []string
	for id, r := range resources("AWS::IAM::Role") {
		if strings.Contains(render(props(r)["AssumeRolePolicyDocument"]), "scheduler.amazonaws.com") {
			ids = append(ids, id)
		}
	}
	if len(ids) != 1 {
		t.Fatalf("%d roles Scheduler may assume, want 1", len(ids))
	}
	return ids[0]
}

// TestScheduler: the group, and the role Scheduler assumes: trusted by this account's
// schedules in that group only, allowed to invoke the wake function only.
func TestScheduler(t *testing.T) {
	check(t, "schedule group", func() {
		tmpl.ResourceCountIs(jsii.String("AWS::Scheduler::ScheduleGroup"), jsii.Number(1))
		tmpl.HasResourceProperties(jsii.String("AWS::Scheduler::ScheduleGroup"), map[string]any{"Name": "archmax-test"})
	})
	role := schedulerRoleID(t)
	trust := props(resources("AWS::IAM::Role")[role])["AssumeRolePolicyDocument"].(map[string]any)["Statement"].([]any)
	if len(trust) != 1 {
		t.Fatalf("scheduler role trust: %d statements, want 1", len(trust))
	}
	st := trust[0].(map[string]any)
	wantTrust := map[string]string{
		"Action":    "sts:AssumeRole",
		"Effect":    "Allow",
		"Principal": `{"Service":"scheduler.amazonaws.com"}`,
		"Condition": `{"ArnLike":{"aws:SourceArn":"arn:${AWS::Partition}:scheduler:${AWS::Region}:${AWS::AccountId}:schedule/archmax-test/*"},"StringEquals":{"aws:SourceAccount":"${AWS::AccountId}"}}`,
	}
	for k, want := range wantTrust {
		got := render(st[k])
		if k == "Condition" {
			got = renderDeep(st[k])
		}
		if got != want {
			t.Errorf("scheduler role trust %s = %s, want %s", k, got, want)
		}
	}
	if p := props(resources("AWS::IAM::Role")[role]); p["ManagedPolicyArns"] != nil || p["Policies"] != nil {
		t.Errorf("scheduler role has managed or inline policies: %v %v", p["ManagedPolicyArns"], p["Policies"])
	}
	got := grantsOf(role)
	want := []string{"Allow lambda:InvokeFunction ${" + functionIDs(t)[FnWake] + ".Arn}",
		"Allow sqs:SendMessage ${" + queueID(t, "schedules-dlq") + ".Arn}"} // its dead letters
	if !slices.Equal(got, want) {
		t.Errorf("scheduler role may\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// TestEventRules: a start rule per distinct route pattern (→ turn), the delivery rule
// (→ deliver), the 5-minute sweep (→ wake).
func TestEventRules(t *testing.T) {
	ids := functionIDs(t)
	target := func(fn string) any {
		return []any{assertions.Match_ObjectLike(&map[string]any{"Arn": map[string]any{"Fn::GetAtt": []any{ids[fn], "Arn"}}})}
	}
	bus := stageBus(t)
	onBus := map[string]any{"Ref": bus}
	check(t, "rules", func() {
		tmpl.ResourceCountIs(jsii.String("AWS::Events::Rule"), jsii.Number(4))
		tmpl.HasResourceProperties(jsii.String("AWS::Events::Rule"), map[string]any{"EventBusName": onBus,
			"EventPattern": map[string]any{"source": []any{"orders.app"}, "detail-type": []any{"Order Placed"}}, "Targets": target(FnTurn),
		})
		tmpl.HasResourceProperties(jsii.String("AWS::Events::Rule"), map[string]any{"EventBusName": onBus,
			"EventPattern": map[string]any{"source": []any{"hr.app"}}, "Targets": target(FnTurn),
		})
		tmpl.HasResourceProperties(jsii.String("AWS::Events::Rule"), map[string]any{"EventBusName": onBus,
			"EventPattern": map[string]any{"source": []any{"archmax.delivery", "payments.app"}, "detail": map[string]any{"sessionId": []any{map[string]any{"exists": true}}}},
			"Targets":      target(FnDeliver),
		})
		// scheduled rules run on the default bus only
		tmpl.HasResourceProperties(jsii.String("AWS::Events::Rule"), map[string]any{"ScheduleExpression": "rate(5 minutes)", "Targets": target(FnWake),
			"EventBusName": assertions.Match_Absent()})
		for _, fn := range []string{FnTurn, FnDeliver, FnWake} {
			tmpl.HasResourceProperties(jsii.String("AWS::Lambda::Permission"), map[string]any{
				"Action": "lambda:InvokeFunction", "Principal": "events.amazonaws.com",
				"FunctionName": map[string]any{"Fn::GetAtt": []any{ids[fn], "Arn"}},
			})
		}
	})
}

// TestEventBus (Issue 17): starts and deliveries arrive on the stage's own bus, never the
// default bus; its resource policy accepts the configured other accounts and principals
// for the routed sources only, and refuses everyone's event of any other source (the
// source is the principal a start or delivery is recorded as).
func TestEventBus(t *testing.T) {
	bus := stageBus(t)
	if name := props(resources("AWS::Events::EventBus")[bus])["Name"]; name != "archmax-test" {
		t.Errorf("bus name %v", name)
	}
	for id, r := range resources("AWS::Events::Rule") {
		p := props(r)
		if p["ScheduleExpression"] == nil && render(p["EventBusName"]) != "${"+bus+"}" {
			t.Errorf("rule %s is on %v, want the stage's bus", id, p["EventBusName"])
		}
	}
	sources := `["archmax.delivery","hr.app","orders.app","payments.app"]`
	want := map[string]string{
		"cdk-PutFromConfiguredPrincipals": `{"Action":"events:PutEvents","Condition":{"ForAllValues:StringEquals":{"events:source":` + sources + `}},` +
			`"Effect":"Allow","Principal":{"AWS":["arn:${AWS::Partition}:iam::210987654321:root","arn:aws:iam::210987654321:role/partner-events"]},` +
			`"Resource":"${` + bus + `.Arn}","Sid":"cdk-PutFromConfiguredPrincipals"}`,
		"cdk-OnlyRoutedSources": `{"Action":"events:PutEvents","Condition":{"ForAnyValue:StringNotEquals":{"events:source":` + sources + `}},` +
			`"Effect":"Deny","Principal":{"AWS":"*"},"Resource":"${` + bus + `.Arn}","Sid":"cdk-OnlyRoutedSources"}`,
	}
	got := map[string]string{}
	for _, r := range resources("AWS::Events::EventBusPolicy") {
		p := props(r)
		if render(p["EventBusName"]) != "${"+bus+"}" {
			t.Errorf("a policy on another bus: %v", p["EventBusName"])
		}
		got[p["StatementId"].(string)] = renderDeep(p["Statement"])
	}
	for sid, w := range want {
		if got[sid] != w {
			t.Errorf("bus policy %s =\n  %s\nwant\n  %s", sid, got[sid], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("bus policies %v, want exactly %d", got, len(want))
	}
	check(t, "the bus is an output", func() {
		tmpl.HasOutput(jsii.String("EventBusName"), map[string]any{"Value": map[string]any{"Ref": bus}})
	})
}

// grantsOf expands every statement of the policies attached to role into atomic
// "Effect action resource [condition]" lines, sorted.
func grantsOf(role string) []string {
	var out []string
	add := func(doc any) {
		for _, s := range doc.(map[string]any)["Statement"].([]any) {
			st := s.(map[string]any)
			cond := ""
			if c, ok := st["Condition"]; ok {
				cond = " if " + renderDeep(c)
			}
			if st["NotAction"] != nil || st["NotResource"] != nil || st["Principal"] != nil {
				out = append(out, "UNEXPECTED "+renderDeep(st))
			}
			for _, a := range strs(st["Action"]) {
				for _, r := range strs(st["Resource"]) {
					out = append(out, fmt.Sprintf("%s %s %s%s", st["Effect"], a, r, cond))
				}
			}
		}
	}
	for _, p := range resources("AWS::IAM::Policy") {
		for _, r := range props(p)["Roles"].([]any) {
			if render(r) == "${"+role+"}" {
				add(props(p)["PolicyDocument"])
			}
		}
	}
	for _, p := range resources("AWS::IAM::ManagedPolicy") {
		for _, r := range strs(props(p)["Roles"]) {
			if r == "${"+role+"}" {
				out = append(out, "UNEXPECTED managed policy")
			}
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// renderDeep renders every intrinsic inside v (renderDeep of a map renders its values).
func renderDeep(v any) string {
	var walk func(v any) any
	walk = func(v any) any {
		switch t := v.(type) {
		case map[string]any:
			if len(t) == 1 {
				for k := range t {
					if k == "Ref" || strings.HasPrefix(k, "Fn::") {
						return render(t)
					}
				}
			}
			m := map[string]any{}
			for k, e := range t {
				m[k] = walk(e)
			}
			return m
		case []any:
			var l []any
			for _, e := range t {
				l = append(l, walk(e))
			}
			return l
		}
		return v
	}
	b, _ := json.Marshal(walk(v))
	return string(b)
}

// TestLeastPrivilege: each function's role may do exactly what its code calls (written out
// here independently of AccessOf), on this stack's resources, and nothing else — no
// managed policy, no wildcard beyond a key prefix or the schedules' name prefix.
func TestLeastPrivilege(t *testing.T) {
	ids := functionIDs(t)
	table, bucket := only(t, "AWS::DynamoDB::Table"), only(t, "AWS::S3::Bucket")
	tableArn, bucketArn := "${"+table+".Arn}", "${"+bucket+".Arn}"
	schedRole := schedulerRoleID(t)
	arn := func(service, region, account, resource string) string {
		return fmt.Sprintf("arn:${AWS::Partition}:%s:%s:%s:%s", service, region, account, resource)
	}
	here := func(service, resource string) string {
		return arn(service, "${AWS::Region}", "${AWS::AccountId}", resource)
	}
	profile := here("bedrock", "inference-profile/"+testProfile)
	var models []string // Converse and ConverseStream, on the same models
	for _, action := range []string{"bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"} {
		models = append(models,
			"Allow "+action+" "+profile,
			"Allow "+action+" "+arn("bedrock", "${AWS::Region}", "", "foundation-model/amazon.nova-lite-v1:0"),
			"Allow "+action+" "+testModels[1],
			"Allow "+action+" "+arn("bedrock", "*", "", "foundation-model/anthropic.claude-sonnet-4-5-20250929-v1:0")+
				` if {"StringEquals":{"bedrock:InferenceProfileArn":"`+profile+`"}}`)
	}
	// what testdata/workspace/archmax.host.yaml names, granted to the functions that run
	// engines (and nothing for the function URL or the environment variable it also names)
	s3 := func(resource string) string { return "arn:${AWS::Partition}:s3:::" + resource }
	host := []string{
		"Allow lambda:InvokeFunction " + here("lambda", "function:orders-get:live"),
		"Allow lambda:InvokeFunction arn:aws:lambda:eu-west-1:210987654321:function:refunds",
		"Allow lambda:InvokeFunction " + arn("lambda", "${AWS::Region}", "210987654321", "function:audit:7"),
		"Allow secretsmanager:GetSecretValue " + here("secretsmanager", "secret:billing/api-token-??????"),
		"Allow secretsmanager:GetSecretValue arn:aws:secretsmanager:eu-west-1:123456789012:secret:carrier-key-AbC123",
		"Allow secretsmanager:GetSecretValue arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/tickets-mcp-??????",
		"Allow execute-api:Invoke " + arn("execute-api", "eu-west-1", "${AWS::AccountId}", "a1b2c3d4e5/prod/POST/orders/*/notes"),
		"Allow execute-api:Invoke " + arn("execute-api", "eu-west-1", "${AWS::AccountId}", "a1b2c3d4e5/$default/POST/prod/orders/*/notes"),
		"Allow bedrock-agentcore:InvokeGateway " + arn("bedrock-agentcore", "eu-west-1", "${AWS::AccountId}", "gateway/crm-gw-a1b2c3"),
		"Allow s3:GetObject " + s3("acme-contracts/current/*"),
		"Allow s3:ListBucket " + s3("acme-contracts") + ` if {"StringLike":{"s3:prefix":["current/*"]}}`,
		"Allow s3:GetObject " + s3("acme-contracts/terms.md"),
		"Allow s3:ListBucket " + s3("acme-contracts") + ` if {"StringLike":{"s3:prefix":["terms.md"]}}`,
		"Allow s3:GetObject " + s3("acme-scratch/agents/*"),
		"Allow s3:PutObject " + s3("acme-scratch/agents/*"),
		"Allow s3:DeleteObject " + s3("acme-scratch/agents/*"),
		"Allow s3:ListBucket " + s3("acme-scratch") + ` if {"StringLike":{"s3:prefix":["agents/*"]}}`,
		"Allow events:PutEvents " + here("events", "event-bus/archmax-test-notifications"),
	}
	var roles = map[string]string{}
	for fn, id := range ids {
		p := props(resources("AWS::Lambda::Function")[id])
		role := strings.TrimSuffix(strings.TrimPrefix(render(p["Role"]), "${"), ".Arn}")
		roles[fn] = role
	}
	writer := func(fn string, table ...string) []string {
		g := []string{
			"Allow s3:GetObject " + bucketArn + "/specs/*",
			"Allow s3:GetObject " + bucketArn + "/sessions/*",
			"Allow s3:PutObject " + bucketArn + "/sessions/*",
			"Allow s3:DeleteObject " + bucketArn + "/sessions/*",
			"Allow s3:ListBucket " + bucketArn + ` if {"StringLike":{"s3:prefix":["specs/*","sessions/*"]}}`,
			"Allow scheduler:CreateSchedule " + here("scheduler", "schedule/archmax-test/archmax-*"),
			"Allow scheduler:UpdateSchedule " + here("scheduler", "schedule/archmax-test/archmax-*"),
			"Allow scheduler:DeleteSchedule " + here("scheduler", "schedule/archmax-test/archmax-*"),
			"Allow iam:PassRole ${" + schedRole + `.Arn} if {"StringEquals":{"iam:PassedToService":"scheduler.amazonaws.com"}}`,
			"Allow lambda:InvokeFunction " + here("lambda", "function:archmax-test-"+fn),
		}
		for _, a := range table {
			g = append(g, "Allow dynamodb:"+a+" "+tableArn)
		}
		return append(append(g, models...), host...)
	}
	engine := []string{"GetItem", "Query", "UpdateItem", "BatchWriteItem"}
	http := append(slices.Clone(engine), "PutItem")
	want := map[string][]string{
		FnTurn:    writer(FnTurn, http...),
		FnDecide:  writer(FnDecide, append(slices.Clone(http), "DeleteItem")...), // DELETE /v1/sessions/{id} (RD22-7)
		FnDeliver: writer(FnDeliver, http...),
		FnWake: append(writer(FnWake, append(slices.Clone(engine), "DeleteItem")...), "Allow dynamodb:Query "+tableArn+"/index/"+IndexByParkDue,
			// the table stream's expired heads (retention.go, RD22-9): that stream only
			"Allow dynamodb:DescribeStream ${"+table+".StreamArn}", "Allow dynamodb:GetRecords ${"+table+".StreamArn}",
			"Allow dynamodb:GetShardIterator ${"+table+".StreamArn}", "Allow dynamodb:ListStreams "+tableArn+"/stream/*"),
		FnStream: writer(FnStream, http...),
		FnSessions: {
			"Allow dynamodb:GetItem " + tableArn,
			"Allow dynamodb:Query " + tableArn,
			"Allow dynamodb:Query " + tableArn + "/index/" + IndexByUpdated,
			"Allow dynamodb:Query " + tableArn + "/index/" + IndexByOwner,
			"Allow dynamodb:Query " + tableArn + "/index/" + IndexByParkDue,
			"Allow s3:GetObject " + bucketArn + "/sessions/*",
			"Allow s3:ListBucket " + bucketArn + ` if {"StringLike":{"s3:prefix":["sessions/*"]}}`,
		},
	}
	logGroups := map[string]string{}
	for id, r := range resources("AWS::Logs::LogGroup") {
		logGroups[strings.TrimPrefix(props(r)["LogGroupName"].(string), "/aws/lambda/archmax-test-")] = id
	}
	for _, fn := range FunctionNames {
		role := roles[fn]
		rp := props(resources("AWS::IAM::Role")[role])
		if rp == nil {
			t.Errorf("%s: role %s not in the template", fn, role)
			continue
		}
		if rp["ManagedPolicyArns"] != nil || rp["Policies"] != nil {
			t.Errorf("%s: role has managed or inline policies: %v %v", fn, rp["ManagedPolicyArns"], rp["Policies"])
		}
		if got := renderDeep(rp["AssumeRolePolicyDocument"]); !strings.Contains(got, `"Principal":{"Service":"lambda.amazonaws.com"}`) {
			t.Errorf("%s: role trust %s", fn, got)
		}
		w := append(slices.Clone(want[fn]),
			"Allow logs:CreateLogStream ${"+logGroups[fn]+".Arn}",
			"Allow logs:PutLogEvents ${"+logGroups[fn]+".Arn}",
			// active tracing: X-Ray's actions take no resource
			"Allow xray:PutTelemetryRecords *", "Allow xray:PutTraceSegments *")
		if slices.Contains(AsyncFunctions, fn) { // its on-failure destination
			w = append(w, "Allow sqs:SendMessage ${"+queueID(t, fn+"-failed")+".Arn}")
		}
		sort.Strings(w)
		got := grantsOf(role)
		if !slices.Equal(got, w) {
			extra, missing := diff(got, w), diff(w, got)
			t.Errorf("%s: role grants beyond what the function uses:\n  %s\nmissing:\n  %s", fn, strings.Join(extra, "\n  "), strings.Join(missing, "\n  "))
		}
		for _, g := range got {
			if f := strings.Fields(g); strings.Contains(f[1], "*") || (f[2] == "*" && !strings.HasPrefix(f[1], "xray:")) {
				t.Errorf("%s: wildcard grant %s", fn, g)
			}
		}
	}
	// no role in the stack but the functions', Scheduler's and CDK's own helpers
	for id := range resources("AWS::IAM::Role") {
		if id != schedRole && !slices.Contains(valuesOf(roles), id) && !cdkHelper(id) {
			t.Errorf("unexpected role %s", id)
		}
	}
}

func diff(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

func valuesOf(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// TestConfigFromContext: the defaults, the parameters, and the refusals.
func TestConfigFromContext(t *testing.T) {
	build := t.TempDir()
	for _, fn := range FunctionNames {
		must(os.MkdirAll(filepath.Join(build, fn), 0o755))
		must(os.WriteFile(filepath.Join(build, fn, "bootstrap"), nil, 0o755))
	}
	ctx := func(kv map[string]any) (Config, error) {
		return ConfigFromContext(awscdk.NewApp(&awscdk.AppProps{Context: &kv}))
	}
	c, err := ctx(map[string]any{CtxBuildDir: build})
	if err != nil {
		t.Fatal(err)
	}
	if c.Stage != DefaultStage || c.Model != DefaultModel || len(c.Models) != 0 || c.Workspace != nil || c.SpecPrefix != "specs/" || c.SessionPrefix != "sessions/" ||
		!slices.Equal(c.DeliverySources, []string{DefaultDeliverySource}) || c.LogRetentionDays != 30 || c.JWTIssuer != "" || c.EventRoutes != nil ||
		c.JWTScopePrefix != "archmax/" || c.FourEyes || c.IAMAdmins != nil || c.IAMDeciders != nil || c.EventPutters != nil {
		t.Errorf("defaults: %+v", c)
	}
	c, err = ctx(map[string]any{CtxBuildDir: build, CtxFourEyes: "true", CtxIAMAdmins: "arn:aws:iam::123456789012:role/ops",
		CtxIAMDeciders: "arn:aws:iam::123456789012:role/a, arn:aws:sts::123456789012:assumed-role/b/s", CtxEventPutters: "210987654321,arn:aws:iam::210987654321:role/x"})
	if err != nil || !c.FourEyes || len(c.IAMAdmins) != 1 || len(c.IAMDeciders) != 2 || len(c.EventPutters) != 2 {
		t.Errorf("access parameters: %+v, %v", c, err)
	}
	c, err = ctx(map[string]any{CtxBuildDir: build, CtxStage: "prod", CtxModel: "amazon.nova-pro-v1:0", CtxModels: " eu.anthropic.x-v1:0, amazon.nova-pro-v1:0 ",
		CtxSpecPrefix: "authored", CtxEventRoutes: `[{"source":"a","workflow":"w"}]`, CtxLogRetentionDays: "90",
		CtxJWTIssuer: "https://i/", CtxJWTAudience: "a,b"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Stage != "prod" || c.SpecPrefix != "authored/" || !slices.Equal(c.AllModels(), []string{"amazon.nova-pro-v1:0", "eu.anthropic.x-v1:0"}) ||
		len(c.EventRoutes) != 1 || c.LogRetentionDays != 90 || !slices.Equal(c.JWTAudience, []string{"a", "b"}) || c.FunctionName(FnTurn) != "archmax-prod-turn" {
		t.Errorf("parameters: %+v", c)
	}
	// the workspace: read (its host file loaded, its upload staged); without one, nothing
	c, err = ctx(map[string]any{CtxBuildDir: build, CtxWorkspace: "testdata/workspace"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Workspace.Close()
	if c.Workspace.Digest != hostFileDigest(t) || len(c.Workspace.Host.Tools) == 0 || c.Workspace.Dir != "testdata/workspace" {
		t.Errorf("workspace: %+v", c.Workspace)
	}
	for name, kv := range map[string]map[string]any{
		"no workspace there": {CtxBuildDir: build, CtxWorkspace: filepath.Join(build, "none")},
		"not built":          {CtxBuildDir: filepath.Join(build, "none")},
		"stage":              {CtxBuildDir: build, CtxStage: "Prod_1"},
		"routes JSON":        {CtxBuildDir: build, CtxEventRoutes: `[{"source":"a","workflow":"w","x":1}]`},
		"route workflow":     {CtxBuildDir: build, CtxEventRoutes: `[{"source":"a"}]`},
		"catch-all route":    {CtxBuildDir: build, CtxEventRoutes: `[{"workflow":"w"}]`},
		"prefix overlap":     {CtxBuildDir: build, CtxSpecPrefix: "sessions/specs/"},
		"jwt half":           {CtxBuildDir: build, CtxJWTIssuer: "https://i/"},
		"retention":          {CtxBuildDir: build, CtxLogRetentionDays: "10"},
		"iam roles with jwt": {CtxBuildDir: build, CtxJWTIssuer: "https://i/", CtxJWTAudience: "a", CtxIAMDeciders: "arn:aws:iam::123456789012:role/a"},
		"iam role holder":    {CtxBuildDir: build, CtxIAMAdmins: "ops"},
		"event putter":       {CtxBuildDir: build, CtxEventPutters: "2109876543"},
		"four-eyes":          {CtxBuildDir: build, CtxFourEyes: "sometimes"},
	} {
		if _, err := ctx(kv); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// goConstants reads the string constants of a Go source file (name → value).
func goConstants(t *testing.T, file string) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if i < len(vs.Values) {
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						v, _ := strconv.Unquote(lit.Value)
						out[n.Name] = v
					}
				}
			}
		}
	}
	return out
}

func hostFileDigest(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata/workspace", hostconfig.File))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(src)
	return hex.EncodeToString(sum[:])
}

// TestWorkspaceDeployment: with a workspace, the stack uploads exactly its authored tree
// under the spec prefix (a CDK bucket deployment that prunes the rest, after the functions
// and their grants), with no secret, local store or case file in it; what the host file
// names but cannot be granted is a synth warning. Without one: no upload, no host grants.
func TestWorkspaceDeployment(t *testing.T) {
	ids := functionIDs(t)
	bucket := only(t, "AWS::S3::Bucket")
	deployments := resources("Custom::CDKBucketDeployment")
	if len(deployments) != 1 {
		t.Fatalf("%d bucket deployments, want 1", len(deployments))
	}
	var dep map[string]any
	for _, d := range deployments {
		dep = d
	}
	p := props(dep)
	if render(p["DestinationBucketName"]) != "${"+bucket+"}" || p["DestinationBucketKeyPrefix"] != "specs/" || p["Prune"] != true ||
		p["RetainOnDelete"] != true || p["OutputObjectKeys"] != false {
		t.Errorf("the upload: bucket %s, prefix %v, prune %v, retain %v, output keys %v", render(p["DestinationBucketName"]), p["DestinationBucketKeyPrefix"],
			p["Prune"], p["RetainOnDelete"], p["OutputObjectKeys"])
	}
	deps := strs(dep["DependsOn"])
	for fn, id := range ids {
		if !slices.Contains(deps, id) {
			t.Errorf("the upload does not wait for functions/%s (%s): DependsOn %v", fn, id, deps)
		}
	}
	// the asset is exactly the authored tree
	keys := strs(p["SourceObjectKeys"])
	if len(keys) != 1 {
		t.Fatalf("source objects %v, want the workspace's one asset", keys)
	}
	asset := filepath.Join(outdir, "asset."+strings.TrimSuffix(keys[0], ".zip"))
	var files []string
	must(filepath.WalkDir(asset, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(asset, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	}))
	sort.Strings(files)
	want := []string{".platform/notes.md", "AGENTS.md", "archmax.host.yaml", "skills/orders/SKILL.md", "workflows/desk/scripts/noop.js", "workflows/desk/workflow.yaml"}
	if !slices.Equal(files, want) || !slices.Equal(testCfg.Workspace.Files, want) {
		t.Errorf("uploaded %v (listed %v), want %v", files, testCfg.Workspace.Files, want)
	}
	if got, err := os.ReadFile(filepath.Join(asset, hostconfig.File)); err != nil || hostconfig.Digest(got) != hostFileDigest(t) {
		t.Errorf("the uploaded host file is not the granted one: %v", err)
	}
	// two tools on one route (a query string apart) grant it once
	for id, r := range resources("AWS::IAM::Policy") {
		doc := renderDeep(props(r)["PolicyDocument"])
		if n := strings.Count(doc, "a1b2c3d4e5/prod/POST/orders/*/notes"); n > 1 {
			t.Errorf("policy %s names the route %d times", id, n)
		}
	}
	// what the stack cannot grant is said at synth
	for _, w := range []string{"is signed for lambda: the stack grants only execute-api and bedrock-agentcore endpoints",
		"reads the environment variable STATUS_KEY, which the functions do not have"} {
		check(t, "synth warning: "+w, func() {
			assertions.Annotations_FromStack(testStack.Stack).HasWarning(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String(regexp.QuoteMeta(w))))
		})
	}
	// without a workspace: no upload, no digest, no host grant
	for _, r := range jwtJSON["Resources"].(map[string]any) {
		r := r.(map[string]any)
		if r["Type"] == "Custom::CDKBucketDeployment" {
			t.Error("no workspace: a bucket deployment")
		}
		if r["Type"] == "AWS::IAM::Policy" {
			doc := renderDeep(props(r)["PolicyDocument"])
			for _, a := range []string{"secretsmanager:", "execute-api:", "bedrock-agentcore:", "acme-"} {
				if strings.Contains(doc, a) {
					t.Errorf("no workspace: a policy grants %s: %s", a, doc)
				}
			}
		}
	}
}

// TestReadWorkspace: a workspace is refused at synth when it is none, when its host file
// does not load, or when a mount has no S3 location (the functions could not apply it);
// without a host file its digest is "none" and nothing is granted.
func TestReadWorkspace(t *testing.T) {
	write := func(dir string, files map[string]string) {
		for name, content := range files {
			must(os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
			must(os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
		}
	}
	flow := map[string]string{"workflows/w/workflow.yaml": "states: {}\n"}
	for name, c := range map[string]struct {
		files map[string]string
		want  string
	}{
		"no workflows":    {map[string]string{"AGENTS.md": "x"}, "no workflows/ folder"},
		"a broken file":   {map[string]string{hostconfig.File: "tools: {}\n"}, "'tools' must be a list"},
		"a local mount":   {map[string]string{hostconfig.File: "mounts:\n  - { name: contracts, dir: c }\n"}, "mount 'contracts' has no s3 location"},
		"a reserved name": {map[string]string{hostconfig.File: "tools:\n  - { name: read_file, description: d, input: { type: object }, lambda: { function: f } }\n"}, "tool 'read_file' cannot be declared"},
		// what the http kind would refuse at run time, the synth refuses first
		"a credential header": {map[string]string{hostconfig.File: "tools:\n  - { name: t, description: d, input: { type: object }, http: { method: GET, url: 'https://api.example.com/x', headers: { Authorization: 'Bearer x' } } }\n"},
			"archmax.host.yaml:2:123: header 'Authorization' carries credentials, which are never written in the host file [tools.0.http.headers.Authorization]"},
	} {
		dir := t.TempDir()
		write(dir, c.files)
		if name != "no workflows" {
			write(dir, flow)
		}
		if _, err := ReadWorkspace(dir); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, c.want)
		}
	}
	dir := t.TempDir()
	write(dir, flow)
	w, err := ReadWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if w.Host != nil || w.Digest != hostconfig.NoFile || !slices.Equal(w.Files, []string{"workflows/w/workflow.yaml"}) {
		t.Errorf("no host file: %+v", w)
	}
	if g := NewHostGrants(testStack.Stack, w.Host); len(g.Statements)+len(g.Warnings) != 0 {
		t.Errorf("no host file, grants %d, warnings %v", len(g.Statements), g.Warnings)
	}
	if b, err := os.ReadFile(filepath.Join(w.Stage, "workflows/w/workflow.yaml")); err != nil || string(b) != "states: {}\n" {
		t.Errorf("staged: %q %v", b, err)
	}
	stage := w.Stage
	must(w.Close())
	if _, err := os.Stat(stage); !os.IsNotExist(err) {
		t.Errorf("the stage outlives Close: %v", err)
	}
}
