package main

import (
	"encoding/json"
	"net"
	"strings"
	"testing"
)

const danaAsks = "Hi, I'm Dana from the platform team. I need badge access to the east lab, please."

// refusedEndpoint is an http URL where nothing listens.
func refusedEndpoint(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return "http://" + addr
}

// A collector that cannot be reached is one `⚠ tracing` line on stderr — with --json one
// warning record of scope tracing on stdout — never a raw log line, and the run's exit
// status is its own.
func TestRunTracingCollectorUnreachable(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", refusedEndpoint(t))
	t.Setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "1") // many failed batches, one warning
	code, out, errs := run(t, "run", "--workspace", ws, "--store", t.TempDir(), "--model-script", ws+"/model-scripts/happy.model.yaml",
		"access-request", danaAsks)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if n := strings.Count(errs, "⚠ tracing: spans not exported: "); n != 1 {
		t.Errorf("%d tracing warnings on stderr, want 1:\n%s", n, errs)
	}
	if strings.Contains(errs, "traces export:") || strings.Contains(out, "tracing") {
		t.Errorf("a raw export error, or a warning on stdout:\nstdout %s\nstderr %s", out, errs)
	}

	code, out, errs = run(t, "run", "--json", "--workspace", ws, "--store", t.TempDir(), "--model-script", ws+"/model-scripts/happy.model.yaml",
		"access-request", danaAsks)
	if code != exitOK || errs != "" {
		t.Fatalf("--json: exit %d, stderr %q", code, errs)
	}
	var warnings []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not a JSON line: %q", l)
		}
		if m["type"] == "warning" && m["scope"] == "tracing" {
			warnings = append(warnings, m)
		}
	}
	if len(warnings) != 1 || !strings.HasPrefix(warnings[0]["message"].(string), "spans not exported: ") {
		t.Errorf("tracing warning records = %v, want one", warnings)
	}
}

// Every OTEL_* setting that cannot work is a usage error (exit 2) of run and serve alike,
// naming the variable and the value as set — a password masked — and what is accepted.
func TestTracingSettingsThatCannotWorkAreUsageErrors(t *testing.T) {
	for _, c := range []struct {
		vars   map[string]string
		want   []string
		hidden string
	}{
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://localhost:4318", "OTEL_TRACES_SAMPLER": "bogus"},
			[]string{`OTEL_TRACES_SAMPLER="bogus"`, "parentbased_always_on"}, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://localhost:4318", "OTEL_EXPORTER_OTLP_TIMEOUT": "abc"},
			[]string{`OTEL_EXPORTER_OTLP_TIMEOUT="abc"`, "milliseconds"}, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "ftp://user:S3CRETPW@collector"},
			[]string{`OTEL_EXPORTER_OTLP_ENDPOINT="ftp://user:xxxxx@collector"`, "http://"}, "S3CRETPW"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://"},
			[]string{`OTEL_EXPORTER_OTLP_ENDPOINT="http://"`}, "/v1/traces"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://localhost:4318", "OTEL_EXPORTER_OTLP_HEADERS": "Authorization: Bearer S3CRETPW"},
			[]string{"OTEL_EXPORTER_OTLP_HEADERS: entry 1"}, "S3CRETPW"},
	} {
		for k, v := range c.vars {
			t.Setenv(k, v)
		}
		for _, args := range [][]string{
			{"run", "--workspace", ws, "--store", t.TempDir(), "--model-script", ws + "/model-scripts/happy.model.yaml", "access-request", danaAsks},
			{"serve", "--workspace", ws, "--store", t.TempDir(), "--model-script", ws + "/model-scripts/happy.model.yaml", "--addr", "127.0.0.1:0"},
		} {
			code, _, errs := run(t, args...)
			if code != exitUsage {
				t.Errorf("%s with %v: exit %d, want %d: %s", args[0], c.vars, code, exitUsage, errs)
			}
			for _, w := range c.want {
				if !strings.Contains(errs, w) {
					t.Errorf("%s with %v: stderr lacks %s:\n%s", args[0], c.vars, w, errs)
				}
			}
			if c.hidden != "" && strings.Contains(errs, c.hidden) {
				t.Errorf("%s with %v: stderr shows %q:\n%s", args[0], c.vars, c.hidden, errs)
			}
		}
		for k := range c.vars {
			t.Setenv(k, "")
		}
	}
}
