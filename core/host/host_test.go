package host

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/hostconfig"
	"github.com/archmax-ai/archmax/core/hosttool"
	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/store"
	"github.com/archmax-ai/archmax/core/store/memory"
)

const flow = `states:
  work:
    triggers: { manual: }
    instructions: Work.
    tools:
      allow: [get_order]
`

// scripted answers each model call with the next reply.
type scripted struct {
	replies []func(*model.Request) *model.Response
}

func (s *scripted) Converse(_ context.Context, req *model.Request) (*model.Response, error) {
	if len(s.replies) == 0 {
		return nil, errors.New("no reply left")
	}
	r := s.replies[0]
	s.replies = s.replies[1:]
	return r(req), nil
}

func toolCalls(calls ...model.Block) func(*model.Request) *model.Response {
	return func(*model.Request) *model.Response {
		return &model.Response{StopReason: model.StopToolUse, Message: model.Message{Role: model.RoleAssistant, Content: calls}}
	}
}

func text(s string) func(*model.Request) *model.Response {
	return func(*model.Request) *model.Response {
		return &model.Response{StopReason: model.StopEndTurn, Message: model.Message{Role: model.RoleAssistant, Content: []model.Block{{Kind: model.BlockText, Text: s}}}}
	}
}

func use(id, name string, input map[string]any) model.Block {
	raw, _ := json.Marshal(input)
	return model.Block{Kind: model.BlockToolUse, ToolUse: &model.ToolUse{ID: id, Name: name, Input: raw}}
}

// fakeKind is a tool kind answering every call with its arguments' order id.
func fakeKind(calls *[]string) hosttool.Builder {
	return func(_ context.Context, d hostconfig.ToolDecl, _ hosttool.Deps) ([]session.HostTool, error) {
		return []session.HostTool{{Name: d.Name, Description: d.Description, InputSchema: d.Input, Paths: d.Paths,
			Handler: func(_ context.Context, c session.HostCall) (string, error) {
				*calls = append(*calls, c.Args["id"].(string))
				return "order " + c.Args["id"].(string) + " shipped", nil
			}}}, nil
	}
}

const hostFile = `tools:
  - name: get_order
    description: Gets an order.
    input: { type: object, properties: { id: { type: string } }, required: [id] }
    lambda: { function: orders-get }
policyRules:
  - id: host.no-ord-9
    effect: block
    tools: [get_order]
    args: { id: ["ORD-9*"] }
    reason: ORD-9 is under investigation.
mounts:
  - { name: contracts, dir: contracts }
`

type world struct {
	authored *memory.Files
	backend  *memory.Files
	model    *scripted
	calls    []string
	env      Env
	base     session.Config
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{authored: memory.NewFiles(), backend: memory.NewFiles(), model: &scripted{}}
	ctx := context.Background()
	for k, v := range map[string]string{"workflows/wf/workflow.yaml": flow} {
		if err := w.authored.Write(ctx, k, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.backend.Write(ctx, "srv/contracts/a.md", []byte("contract A")); err != nil {
		t.Fatal(err)
	}
	w.env = Env{Kinds: map[string]hosttool.Builder{hostconfig.KindLambda: fakeKind(&w.calls)},
		Mount: func(_ context.Context, m hostconfig.MountDecl) (store.Files, string, error) {
			return w.backend, "srv/" + m.Dir, nil
		}}
	w.base = session.Config{Authored: w.authored, Log: memory.New(), Files: memory.NewFiles(), Model: w.model, ModelID: "m"}
	return w
}

func (w *world) write(t *testing.T, src string) {
	t.Helper()
	if err := w.authored.Write(context.Background(), hostconfig.File, []byte(src)); err != nil {
		t.Fatal(err)
	}
}

// The host file's tools, rules and mounts reach the engine: the model calls the declared
// tool (the handler runs), the rule refuses its ORD-9 call with the host's reason, the
// mount serves its backend read-only.
func TestTheHostFileReachesTheEngine(t *testing.T) {
	w := newWorld(t)
	w.write(t, hostFile)
	engines := NewEngines(w.base, w.env)
	w.model.replies = append(w.model.replies,
		toolCalls(use("c1", "get_order", map[string]any{"id": "ORD-1"}), use("c2", "get_order", map[string]any{"id": "ORD-9000"}),
			use("c3", "read_file", map[string]any{"file_path": "contracts/a.md"}),
			use("c4", "write_file", map[string]any{"file_path": "contracts/b.md", "content": "x"})),
		text("done"))
	eng, err := engines.Engine(context.Background(), "wf")
	if err != nil {
		t.Fatal(err)
	}
	out, err := eng.Send(context.Background(), "s1", session.SendInput{Message: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	results := map[string]string{}
	for _, m := range out.Messages {
		if m.ToolCallID != "" {
			results[m.ToolCallID] = m.Text
		}
	}
	if results["c1"] != "order ORD-1 shipped" || len(w.calls) != 1 {
		t.Errorf("the declared tool: %q (calls %v)", results["c1"], w.calls)
	}
	if results["c2"] != "[workflow] BLOCKED: 'get_order' is refused by the host's rule 'host.no-ord-9': ORD-9 is under investigation." {
		t.Errorf("the rule: %q", results["c2"])
	}
	if !strings.Contains(results["c3"], "contract A") {
		t.Errorf("the mount: %q", results["c3"])
	}
	if !strings.Contains(results["c4"], "read-only") {
		t.Errorf("a write into the read-only mount: %q", results["c4"])
	}
}

// The engines follow the file: an unchanged file keeps the engine, a changed one rebuilds
// it, a file that does not load fails every call until it is fixed, a removed one leaves a
// host that declares nothing.
func TestEnginesFollowTheHostFile(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	engines := NewEngines(w.base, w.env)
	first, err := engines.Engine(ctx, "wf")
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := engines.Engine(ctx, "wf"); again != first {
		t.Error("no host file, nothing changed: a new engine")
	}
	w.write(t, hostFile)
	second, err := engines.Engine(ctx, "wf")
	if err != nil || second == first {
		t.Fatalf("a new host file: %v (same engine %v)", err, second == first)
	}
	if again, _ := engines.Engine(ctx, "wf"); again != second {
		t.Error("an unchanged host file: a new engine")
	}
	w.write(t, "tools: {}\n")
	_, err = engines.Engine(ctx, "wf")
	var fe *hostconfig.FileError
	if !errors.As(err, &fe) {
		t.Fatalf("a broken host file: %v", err)
	}
	if _, err := engines.SessionWorkflow(ctx, "nope"); err == nil {
		t.Error("reads go on") // the read routes need no engine
	}
	if _, err := engines.Sweep(ctx, time.Now(), 10, nil); !errors.As(err, &fe) {
		t.Errorf("a sweep under a broken host file: %v", err)
	}
	if err := w.authored.Delete(ctx, hostconfig.File); err != nil {
		t.Fatal(err)
	}
	third, err := engines.Engine(ctx, "wf")
	if err != nil || third == second {
		t.Fatalf("the host file removed: %v", err)
	}
	// a kind the host does not have fails the build, naming it; the next call tries again
	w.write(t, strings.Replace(hostFile, "lambda: { function: orders-get }", "http: { method: GET, url: 'https://a.example/{id}' }", 1))
	if _, err := engines.Engine(ctx, "wf"); err == nil || !strings.Contains(err.Error(), `kind "http" is not available in this host`) {
		t.Errorf("an unavailable kind: %v", err)
	}
}

func TestSubtree(t *testing.T) {
	ctx := context.Background()
	inner := memory.NewFiles()
	for k, v := range map[string]string{"p/a.md": "a", "p/d/b.md": "b", "other.md": "o", "terms.md": "t"} {
		if err := inner.Write(ctx, k, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	dir := Subtree(inner, "cat/eu", "p")
	if b, err := dir.Read(ctx, "cat/eu/d/b.md"); err != nil || string(b) != "b" {
		t.Errorf("read: %q %v", b, err)
	}
	if _, err := dir.Read(ctx, "cat/other.md"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("outside: %v", err)
	}
	if fi, err := dir.Stat(ctx, "cat/eu"); err != nil || !fi.Dir {
		t.Errorf("root: %+v %v", fi, err)
	}
	if l, err := dir.List(ctx, "cat/eu"); err != nil || len(l) != 2 {
		t.Errorf("list: %+v %v", l, err)
	}
	root := Subtree(inner, "all", "")
	if b, err := root.Read(ctx, "all/other.md"); err != nil || string(b) != "o" {
		t.Errorf("a root mount: %q %v", b, err)
	}
	if fi, err := root.Stat(ctx, "all"); err != nil || !fi.Dir {
		t.Errorf("a root mount's root: %+v %v", fi, err)
	}
	file := Subtree(inner, "legal/terms.md", "terms.md")
	if b, err := file.Read(ctx, "legal/terms.md"); err != nil || string(b) != "t" {
		t.Errorf("a file mount: %q %v", b, err)
	}
	if err := file.Write(ctx, "legal/terms.md", []byte("x")); err != nil {
		t.Errorf("a write through a file mount: %v", err)
	}
}

// A mount the assembly refuses with a shared check's Problem (hostconfig.LocalMountProblem
// locally) is located at the field it names, with its hint — what `archmax validate` says.
func TestAMountProblemIsLocatedAndHinted(t *testing.T) {
	w := newWorld(t)
	cfg, err := hostconfig.Load([]byte("mounts:\n  - name: contracts\n    dir: ./workflows\n"))
	if err != nil {
		t.Fatal(err)
	}
	env := w.env
	env.Mount = func(_ context.Context, m hostconfig.MountDecl) (store.Files, string, error) {
		_, p := hostconfig.LocalMountProblem(m, hostconfig.LocalRoots{Workspace: t.TempDir()})
		return nil, "", p
	}
	_, err = Apply(context.Background(), w.base, cfg, env)
	var me *MountError
	if !errors.As(err, &me) || me.Problem == nil || me.Field != "mounts.0.dir" ||
		!strings.HasPrefix(err.Error(), "archmax.host.yaml:3:10: mount 'contracts': dir ./workflows is the workspace's workflows/") ||
		!strings.Contains(err.Error(), "[mounts.0.dir] (hint: point 'dir' at a folder of its own") {
		t.Errorf("%v", err)
	}
}
