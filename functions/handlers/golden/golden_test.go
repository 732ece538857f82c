package golden_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/archmax-ai/archmax/local/dynamotest"
)

// format is the stored format the engine writes today: its golden files are
// testdata/<format>/. Bump it with a migration when a stored shape changes, and write the
// new format's files with -update; every older format's files stay and must still resume.
const format = "1"

var update = flag.Bool("update", false, "write the golden checkpoints of the current format afresh (testdata/"+format+"/)")

// meta is what a golden checkpoint records beside the stores: its session and the clock
// it was written at (a restored world's clock starts there, so leases and idempotency
// records are as live as they were).
type meta struct {
	Session string    `json:"session"`
	Clock   time.Time `json:"clock"`
}

// TestGoldenResume restores every golden checkpoint of every format into a fresh store and
// resumes it as a deployment would: the decision, the wake, the delivery, a new turn, the
// sweep of an interrupted turn, a sub-workflow's decision, and the repeats of requests
// whose idempotency records the checkpoint holds.
func TestGoldenResume(t *testing.T) {
	formats, err := os.ReadDir("testdata")
	if err != nil || len(formats) == 0 {
		t.Fatalf("no golden checkpoints under testdata/ (%v): write them with -update", err)
	}
	for _, f := range formats {
		for _, sc := range scenarios {
			for _, kind := range []backend{fsBackend, ddbBackend} {
				dir := filepath.Join("testdata", f.Name(), string(kind), sc.name)
				if _, err := os.Stat(dir); err != nil {
					if f.Name() == format {
						t.Errorf("%s is missing: write it with -update", dir)
					}
					continue
				}
				for name, resume := range sc.resumes {
					t.Run(f.Name()+"/"+string(kind)+"/"+sc.name+"/"+name, func(t *testing.T) {
						t.Parallel()
						w, sid := restore(t, kind, dir)
						resume(w, sid)
					})
				}
			}
		}
	}
}

// TestGoldenShapes writes each kind of session afresh and holds what the stores keep — every
// file and item, with the shape of every JSON value in it — to the current format's golden
// checkpoint. It fails on a stored shape that changed: add a migration for sessions
// written before it, bump format and write its golden files with -update.
func TestGoldenShapes(t *testing.T) {
	for _, kind := range []backend{fsBackend, ddbBackend} {
		t.Run(string(kind), func(t *testing.T) {
			if kind == ddbBackend {
				dynamotest.Endpoint(t) // skips without DynamoDB Local
			}
			for _, sc := range scenarios {
				t.Run(sc.name, func(t *testing.T) {
					t.Parallel()
					w := fresh(t, kind)
					sid := sc.make(w)
					got := t.TempDir()
					dump(t, w, sid, got)
					golden := filepath.Join("testdata", format, string(kind), sc.name)
					if *update {
						if err := os.RemoveAll(golden); err != nil {
							t.Fatal(err)
						}
						copyTree(t, got, golden)
						return
					}
					if d := compareShapes(t, kind, got, golden); d != "" {
						t.Errorf("the stored shape of the %s session (%s store) is not the golden one of format %s:\n%s\n"+
							"If the change is meant: add a migration that reads sessions of the older shape, bump format in this package "+
							"and write its golden files with `go test ./functions/handlers/golden -run TestGoldenShapes -update`; "+
							"the older format's files stay and must still resume.", sc.name, kind, format, d)
					}
				})
			}
		})
	}
}

// fresh is an empty world of kind.
func fresh(t *testing.T, kind backend) *world {
	if kind == fsBackend {
		return newWorld(t, kind, t.TempDir(), nil, "", origin)
	}
	ddb, table := dynamotest.NewTable(t)
	return newWorld(t, kind, "", ddb, table, origin)
}

// dump writes w's stores and the checkpoint's meta to dir: the file store's directory as
// it is (without its lock files), or the table's items and the session files as JSON.
func dump(t *testing.T, w *world, sid, dir string) {
	t.Helper()
	writeJSON(t, filepath.Join(dir, "meta.json"), meta{Session: sid, Clock: w.clock.Now()})
	switch w.kind {
	case fsBackend:
		copyTree(t, w.dir, dir)
	case ddbBackend:
		var items []map[string]any
		in := &dynamodb.ScanInput{TableName: aws.String(w.table), ConsistentRead: aws.Bool(true)}
		for {
			out, err := w.ddb.Scan(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range out.Items {
				items = append(items, encodeItem(it))
			}
			if len(out.LastEvaluatedKey) == 0 {
				break
			}
			in.ExclusiveStartKey = out.LastEvaluatedKey
		}
		sort.Slice(items, func(i, j int) bool { return itemKey(items[i]) < itemKey(items[j]) })
		writeJSON(t, filepath.Join(dir, "items.json"), items)
		files := map[string]string{}
		walkFiles(t, w, "", files)
		writeJSON(t, filepath.Join(dir, "files.json"), files)
	}
}

// restore opens a fresh world of kind holding the golden checkpoint in dir.
func restore(t *testing.T, kind backend, dir string) (*world, string) {
	t.Helper()
	var m meta
	readJSON(t, filepath.Join(dir, "meta.json"), &m)
	if kind == fsBackend {
		to := t.TempDir()
		copyTree(t, dir, to)
		if err := os.Remove(filepath.Join(to, "meta.json")); err != nil {
			t.Fatal(err)
		}
		return newWorld(t, kind, to, nil, "", m.Clock), m.Session
	}
	ddb, table := dynamotest.NewTable(t) // skips without DynamoDB Local
	w := newWorld(t, kind, "", ddb, table, m.Clock)
	var items []map[string]any
	readJSON(t, filepath.Join(dir, "items.json"), &items)
	for _, it := range items {
		av, err := decodeItem(it)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		if _, err := ddb.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: av}); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{}
	readJSON(t, filepath.Join(dir, "files.json"), &files)
	for key, text := range files {
		data := []byte(text)
		if b, ok := strings.CutPrefix(text, "base64:"); ok {
			var err error
			if data, err = base64.StdEncoding.DecodeString(b); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.memFiles.Write(context.Background(), key, data); err != nil {
			t.Fatal(err)
		}
	}
	return w, m.Session
}

// walkFiles collects every session file under prefix: UTF-8 text as it is, other bytes as
// "base64:" and their encoding.
func walkFiles(t *testing.T, w *world, prefix string, out map[string]string) {
	entries, err := w.memFiles.List(context.Background(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		key := e.Name
		if prefix != "" {
			key = prefix + "/" + e.Name
		}
		if e.Dir {
			walkFiles(t, w, key, out)
			continue
		}
		data, err := w.memFiles.Read(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		if utf8.Valid(data) && !strings.HasPrefix(string(data), "base64:") {
			out[key] = string(data)
		} else {
			out[key] = "base64:" + base64.StdEncoding.EncodeToString(data)
		}
	}
}

// compareShapes compares the shapes of what two checkpoints of kind store (shapes) and
// describes the differences, path by path ("" when there are none).
func compareShapes(t *testing.T, kind backend, got, golden string) string {
	t.Helper()
	if _, err := os.Stat(golden); err != nil {
		return "  " + golden + " does not exist"
	}
	a, b := shapes(t, kind, got), shapes(t, kind, golden)
	var d []string
	for _, thing := range sortedKeys(a, b) {
		sa, sb := a[thing], b[thing]
		switch {
		case sb == nil:
			d = append(d, "  new:  "+thing)
			continue
		case sa == nil:
			d = append(d, "  gone: "+thing)
			continue
		}
		for _, p := range sortedKeys(sa, sb) {
			switch {
			case !sb[p]:
				d = append(d, "  "+thing+": new   "+p)
			case !sa[p]:
				d = append(d, "  "+thing+": gone  "+p)
			}
		}
	}
	return strings.Join(d, "\n")
}

// shapes maps each stored thing of a checkpoint — a file of the file store, an item of the
// table, a session file — named with the session ids replaced, to its shape (flatten).
func shapes(t *testing.T, kind backend, dir string) map[string]map[string]bool {
	t.Helper()
	var m meta
	readJSON(t, filepath.Join(dir, "meta.json"), &m)
	norm := func(s string) string { return strings.ReplaceAll(s, m.Session, "<session>") }
	out := map[string]map[string]bool{}
	if kind == ddbBackend {
		var items []map[string]any
		readJSON(t, filepath.Join(dir, "items.json"), &items)
		for _, it := range items {
			out["item "+norm(itemKey(it))] = itemShape(it)
		}
		files := map[string]string{}
		readJSON(t, filepath.Join(dir, "files.json"), &files)
		for key, text := range files {
			out["file "+norm(key)] = textShape([]byte(text), "")
		}
		return out
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || p == filepath.Join(dir, "meta.json") {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if strings.HasPrefix(rel, "log/idempotency/") {
			// named by the hash of its key: name it by the key instead
			var rec struct {
				Key   string `json:"key"`
				Value []byte `json:"value"`
			}
			if json.Unmarshal(data, &rec) == nil && rec.Key != "" {
				sh := textShape(data, "")
				maps.Copy(sh, textShape(rec.Value, "value="))
				out["log/idempotency/"+norm(rec.Key)] = sh
				return nil
			}
		}
		out[norm(rel)] = textShape(data, "")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// textShape is the shape of a JSON document (flatten), or {"<at>: bytes"} for anything else.
func textShape(data []byte, at string) map[string]bool {
	out := map[string]bool{}
	var v any
	if json.Unmarshal(data, &v) != nil {
		out[at+": bytes"] = true
		return out
	}
	flatten(v, at, out)
	return out
}

// flatten adds a JSON value's shape to out: a "<path>: <type>" line for every value in it
// (an object's keys as .key, an array's elements as []), so two values of one shape give
// the same lines whatever they hold. A JSON document held in a string is flattened as a
// document ("<path>: json").
func flatten(v any, at string, out map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		out[at+": object"] = true
		for k, e := range v {
			flatten(e, at+"."+k, out)
		}
	case []any:
		out[at+": array"] = true
		for _, e := range v {
			flatten(e, at+"[]", out)
		}
	case string:
		if t := strings.TrimSpace(v); strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
			var doc any
			if json.Unmarshal([]byte(t), &doc) == nil {
				out[at+": json"] = true
				flatten(doc, at, out)
				return
			}
		}
		out[at+": string"] = true
	case float64:
		out[at+": number"] = true
	case bool:
		out[at+": bool"] = true
	case nil:
		out[at+": null"] = true
	}
}

// itemShape is an item's attributes with their DynamoDB types, and the shape of a JSON
// document an S or B attribute holds.
func itemShape(it map[string]any) map[string]bool {
	out := map[string]bool{}
	for k, v := range it {
		av, _ := v.(map[string]any)
		for typ, x := range av {
			out[k+": "+typ] = true
			switch s, _ := x.(string); typ {
			case "S":
				if t := strings.TrimSpace(s); strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
					maps.Copy(out, textShape([]byte(t), k))
				}
			case "B":
				if b, err := base64.StdEncoding.DecodeString(s); err == nil && json.Valid(b) {
					maps.Copy(out, textShape(b, k))
				}
			}
		}
	}
	return out
}

// itemKey is an item's "pk sk".
func itemKey(it map[string]any) string {
	str := func(name string) string {
		av, _ := it[name].(map[string]any)
		s, _ := av["S"].(string)
		return s
	}
	return str("pk") + " " + str("sk")
}

// encodeItem is an item in DynamoDB JSON ({"S": …}, {"N": …}, {"M": {…}}, …).
func encodeItem(it map[string]types.AttributeValue) map[string]any {
	out := make(map[string]any, len(it))
	for k, v := range it {
		out[k] = encodeValue(v)
	}
	return out
}

func encodeValue(v types.AttributeValue) map[string]any {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return map[string]any{"S": v.Value}
	case *types.AttributeValueMemberN:
		return map[string]any{"N": v.Value}
	case *types.AttributeValueMemberB:
		return map[string]any{"B": base64.StdEncoding.EncodeToString(v.Value)}
	case *types.AttributeValueMemberBOOL:
		return map[string]any{"BOOL": v.Value}
	case *types.AttributeValueMemberNULL:
		return map[string]any{"NULL": true}
	case *types.AttributeValueMemberSS:
		return map[string]any{"SS": v.Value}
	case *types.AttributeValueMemberNS:
		return map[string]any{"NS": v.Value}
	case *types.AttributeValueMemberM:
		return map[string]any{"M": encodeItem(v.Value)}
	case *types.AttributeValueMemberL:
		l := make([]any, len(v.Value))
		for i, e := range v.Value {
			l[i] = encodeValue(e)
		}
		return map[string]any{"L": l}
	}
	panic(fmt.Sprintf("golden: attribute type %T", v))
}

// decodeItem reads an item of DynamoDB JSON.
func decodeItem(it map[string]any) (map[string]types.AttributeValue, error) {
	out := make(map[string]types.AttributeValue, len(it))
	for k, v := range it {
		av, err := decodeValue(v)
		if err != nil {
			return nil, fmt.Errorf("attribute %s: %w", k, err)
		}
		out[k] = av
	}
	return out, nil
}

func decodeValue(v any) (types.AttributeValue, error) {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return nil, fmt.Errorf("not a DynamoDB JSON value: %v", v)
	}
	strs := func(x any) []string {
		var out []string
		for _, e := range x.([]any) {
			out = append(out, e.(string))
		}
		return out
	}
	for typ, x := range m {
		switch typ {
		case "S":
			return &types.AttributeValueMemberS{Value: x.(string)}, nil
		case "N":
			return &types.AttributeValueMemberN{Value: x.(string)}, nil
		case "B":
			b, err := base64.StdEncoding.DecodeString(x.(string))
			return &types.AttributeValueMemberB{Value: b}, err
		case "BOOL":
			return &types.AttributeValueMemberBOOL{Value: x.(bool)}, nil
		case "NULL":
			return &types.AttributeValueMemberNULL{Value: true}, nil
		case "SS":
			return &types.AttributeValueMemberSS{Value: strs(x)}, nil
		case "NS":
			return &types.AttributeValueMemberNS{Value: strs(x)}, nil
		case "M":
			inner, err := decodeItem(x.(map[string]any))
			return &types.AttributeValueMemberM{Value: inner}, err
		case "L":
			var l []types.AttributeValue
			for _, e := range x.([]any) {
				av, err := decodeValue(e)
				if err != nil {
					return nil, err
				}
				l = append(l, av)
			}
			return &types.AttributeValueMemberL{Value: l}, nil
		}
		return nil, fmt.Errorf("attribute type %q", typ)
	}
	return nil, nil
}

// copyTree copies the files under from to to, leaving out lock files.
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		target := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if strings.HasSuffix(d.Name(), ".lock") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func sortedKeys[V any](a, b map[string]V) []string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}
