package outbound

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/internal/schematest"
	"github.com/archmax-ai/archmax/core/spec"
)

const schemaFile = "../../docs/schema/session-events.schema.json"

// defOf is each detail type's definition in session-events.schema.json.
var defOf = map[string]string{SessionParked: "parked", SessionAwaitingInput: "awaitingInput", SessionRaised: "raised",
	SessionFailed: "failed", SessionRejected: "rejected", SessionCompleted: "completed", SessionEvent: "event"}

// Required is exactly what the schema requires of each type (Session Event's event through
// its anyOf with omitted: ["event"]).
func TestRequiredIsTheSchemas(t *testing.T) {
	_, root := schematest.Compile(t, schemaFile)
	for _, typ := range Types {
		def := schematest.Pointer(t, root, "/$defs/"+defOf[typ]).(map[string]any)
		var want []string
		for _, k := range def["required"].([]any) {
			want = append(want, k.(string))
		}
		if alt, ok := def["anyOf"].([]any); ok {
			first := alt[0].(map[string]any)["required"].([]any)
			want = append(want, first[0].(string))
		}
		got := Required(typ)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: Required = %v, the schema requires %v", typ, got, want)
		}
	}
}

// At MinDetailBytes every type's detail fits and validates at the longest session id in its
// worst escaping, with 4 KiB of slugs and parkId, whatever else it carries: each optional
// field of the schema (and Session Event's event) is present and large.
func TestMinDetailBytesFitsTheRequiredFields(t *testing.T) {
	sch, root := schematest.Compile(t, schemaFile)
	id := strings.Repeat("<", spec.MaxSessionIDBytes) // JSON: \u003c; path: %3C
	for _, typ := range Types {
		props := schematest.Keys(t, root, "/$defs/"+defOf[typ]+"/properties")
		d := map[string]any{}
		for _, k := range props {
			d[k] = strings.Repeat("x", 20000) // dropped (none of these is required)
		}
		d["event"] = map[string]any{"type": "tool-result", "ts": 1, "level": "info", "data": strings.Repeat("y", 50000)}
		for k, v := range map[string]any{"eventId": EventID(id, 1<<62), "sessionId": id, "sessionSeq": int64(1 << 62),
			"workflow": strings.Repeat("w", 2000), "status": "awaiting_decision", "state": strings.Repeat("s", 2000),
			"ts": int64(1) << 62, "apiPath": APIPath(id), "parkId": "p" + strings.Repeat("0", 40)} {
			if slices.Contains(Required(typ), k) {
				d[k] = v
			}
		}
		if typ != SessionEvent {
			delete(d, "event")
		}
		delete(d, "omitted")
		b := Fit(typ, d, MinDetailBytes)
		var got map[string]any
		if err := json.Unmarshal(b, &got); err != nil || len(b) > MinDetailBytes {
			t.Fatalf("%s: %d bytes over %d: %v", typ, len(b), MinDetailBytes, err)
		}
		for _, k := range Required(typ) {
			if _, ok := got[k]; !ok && !(typ == SessionEvent && k == "event") {
				t.Errorf("%s: dropped required %s", typ, k)
			}
		}
		if err := sch.Validate(map[string]any{"source": Source, "detail-type": typ, "detail": got}); err != nil {
			t.Errorf("%s: %v\n%s", typ, err, b)
		}
		t.Logf("%s: %d bytes", typ, len(b))
	}
}
