package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/archmax-ai/archmax/core/hostconfig"
	"github.com/archmax-ai/archmax/core/outbound"
)

// stageBus is the logical id of the stage's own bus (starts and deliveries).
func stageBus(t *testing.T) string {
	t.Helper()
	for id, r := range resources("AWS::Events::EventBus") {
		if props(r)["Name"] == "archmax-test" {
			return id
		}
	}
	t.Fatal("no stage bus archmax-test")
	return ""
}

// TestNotificationsBus: the host file's events.eventBridge bus (a name) is created beside
// the stage's bus, is an output, and is the one resource events:PutEvents is granted on —
// to the functions that run sessions, nothing else; no start or delivery rule takes the
// notifications' source.
func TestNotificationsBus(t *testing.T) {
	var bus string
	for id, r := range resources("AWS::Events::EventBus") {
		if props(r)["Name"] == "archmax-test-notifications" {
			bus = id
		}
	}
	if bus == "" || len(resources("AWS::Events::EventBus")) != 2 {
		t.Fatalf("buses %v", resources("AWS::Events::EventBus"))
	}
	check(t, "the notifications bus is an output", func() {
		tmpl.HasOutput(jsii.String("NotificationsBusName"), map[string]any{"Value": map[string]any{"Ref": bus}})
	})
	if len(resources("AWS::Events::EventBusPolicy")) != 2 {
		t.Errorf("only the stage's bus has a resource policy: %v", resources("AWS::Events::EventBusPolicy"))
	}
	// events:PutEvents on exactly the notifications bus, for the functions that run engines
	want := "Allow events:PutEvents arn:${AWS::Partition}:events:${AWS::Region}:${AWS::AccountId}:event-bus/archmax-test-notifications"
	ids := functionIDs(t)
	for _, fn := range FunctionNames {
		role := strings.TrimSuffix(strings.TrimPrefix(render(props(resources("AWS::Lambda::Function")[ids[fn]])["Role"]), "${"), ".Arn}")
		var puts []string
		for _, g := range grantsOf(role) {
			if strings.Contains(g, "events:") {
				puts = append(puts, g)
			}
		}
		switch fn {
		case FnSessions:
			if len(puts) != 0 {
				t.Errorf("%s (reads only) may put events: %v", fn, puts)
			}
		default:
			if !slices.Equal(puts, []string{want}) {
				t.Errorf("%s: events grants %v, want [%s]", fn, puts, want)
			}
		}
	}
	// no rule of the stack matches a notification
	for id, r := range resources("AWS::Events::Rule") {
		if src := renderDeep(props(r)["EventPattern"]); strings.Contains(src, `"`+outbound.Source+`"`) && !strings.Contains(src, "anything-but") {
			t.Errorf("rule %s takes the notifications' source: %s", id, src)
		}
	}
}

// A route by detail type alone excludes the notifications' source; a routed source or a
// host bus that would let notifications start or resume sessions is refused.
func TestNotificationsNeverStartSessions(t *testing.T) {
	cfg := testCfg
	cfg.EventRoutes = []EventRoute{{DetailType: "Session Parked", Workflow: "audit"}}
	cfg.Workspace = nil
	cfg.JWTIssuer, cfg.JWTAudience, cfg.JWTScopePrefix, cfg.IAMAdmins, cfg.IAMDeciders = "https://issuer.example.com/", []string{"a"}, DefaultJWTScopePrefix, nil, nil
	must(cfg.Check())
	tpl := assertions.Template_FromStack(NewStack(awscdk.NewApp(nil), cfg).Stack, nil)
	check(t, "a route by detail type excludes our source", func() {
		tpl.HasResourceProperties(jsii.String("AWS::Events::Rule"), map[string]any{
			"EventPattern": map[string]any{"source": []any{map[string]any{"anything-but": []any{outbound.Source}}}, "detail-type": []any{"Session Parked"}}})
	})
	for name, c := range map[string]func(c *Config){
		"delivery source": func(c *Config) { c.DeliverySources = append(c.DeliverySources, outbound.Source) },
		"route source":    func(c *Config) { c.EventRoutes = []EventRoute{{Source: outbound.Source, Workflow: "audit"}} },
	} {
		bad := testCfg
		c(&bad)
		if err := bad.Check(); err == nil || !strings.Contains(err.Error(), outbound.Source) {
			t.Errorf("%s %s: %v", name, outbound.Source, err)
		}
	}
	for _, bus := range []string{"archmax-test", "arn:aws:events:eu-west-1:123456789012:event-bus/archmax-test"} {
		host, err := hostconfig.Load([]byte("events: { eventBridge: { bus: '" + bus + "' } }\n"))
		must(err)
		bad := testCfg
		ws := *testCfg.Workspace
		ws.Host = host
		bad.Workspace = &ws
		if err := bad.Check(); err == nil || !strings.Contains(err.Error(), "stage's bus") {
			t.Errorf("the stage's bus %s as the notifications bus: %v", bus, err)
		}
	}
}
