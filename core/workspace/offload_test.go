package workspace

import (
	"context"
	"strings"
	"testing"
)

func TestOffload(t *testing.T) { // BR-41, 02 §9.1
	if OffloadThreshold != 80_000 {
		t.Fatalf("OffloadThreshold = %d; want BR-41's 80,000", OffloadThreshold)
	}
	onEachStore(t, func(t *testing.T, newFixture fixtureFunc) {
		ctx := context.Background()
		f := newFixture(t)
		text := strings.Repeat("row é 😀\n", 10_000) // 9 UTF-16 units, 12 bytes a line
		got, err := f.ws.Offload(ctx, "toolu_01AbC", text)
		want := "This tool result was too large to show here (90000 characters), so it was saved to " +
			"/large_tool_results/toolu_01AbC. Read it with read_file, using offset and limit to page through it."
		if err != nil || got != want {
			t.Fatalf("Offload = %q, %v; want %q", got, err, want)
		}
		if data, err := f.session.Read(ctx, sid+"/large_tool_results/toolu_01AbC"); err != nil || string(data) != text {
			t.Errorf("offloaded file: %d bytes, %v; want the text", len(data), err)
		}
		if got := f.text(t, "read_file", `{"file_path":"/large_tool_results/toolu_01AbC","offset":9998,"limit":5}`); got != "@@ lines 9999-10000 of 10000 @@\nrow é 😀\nrow é 😀" {
			t.Errorf("paging the offloaded result: %q", got)
		}
		if got, err := f.ws.Offload(ctx, "ptc:3", "x"); err != nil || !strings.Contains(got, " /large_tool_results/ptc_3.") {
			t.Errorf("Offload(ptc:3) = %q, %v", got, err)
		}
		if got := f.text(t, "ls", `{"path":"/large_tool_results"}`); got != "/large_tool_results/ptc_3 (1 bytes)\n/large_tool_results/toolu_01AbC (120000 bytes)" {
			t.Errorf("ls /large_tool_results = %q", got)
		}
	})
	if _, err := newFixture(t).ws.Offload(context.Background(), "", "x"); err == nil {
		t.Error("Offload with an empty call id succeeded")
	}
}

func TestOffloadName(t *testing.T) {
	long := strings.Repeat("a", 200)
	tests := []struct{ id, want string }{
		{"toolu_01AbC-9", "toolu_01AbC-9"},
		{"ptc:3", "ptc_3"},
		{"../../etc/passwd", "______etc_passwd"},
		{"é", "__"},
		{strings.Repeat("b", 128), strings.Repeat("b", 128)},
	}
	for _, tt := range tests {
		if got := offloadName(tt.id); got != tt.want {
			t.Errorf("offloadName(%q) = %q; want %q", tt.id, got, tt.want)
		}
	}
	a, b := offloadName(long), offloadName(long+"b")
	if len(a) != 128 || len(b) != 128 || a == b || !strings.HasPrefix(a, strings.Repeat("a", 111)+"-") {
		t.Errorf("long ids: %q, %q; want distinct 128-byte names", a, b)
	}
}
