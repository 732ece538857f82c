package workspace

import (
	"context"
	"encoding/json"
	"fmt"
)

// Result is what a built-in tool answers: Text is what the model (or a script) reads.
// Error marks an error-status tool message, used only for argument-check failures
// (BR-41); operational failures are ordinary results whose text starts "Error" (BR-21).
type Result struct {
	Text  string
	Error bool
}

// builtin is one model-facing tool of this package.
type builtin struct {
	description string
	schema      string
	run         func(w *Workspace, ctx context.Context, a *argReader) (string, error)
}

// toolNames is the order Tools reports.
var toolNames = []string{"ls", "read_file", "write_file", "edit_file", "glob", "grep", "copy_file", "move_file", "remove_file"}

// transferSchema is the input schema of copy_file and move_file (BR-22).
func transferSchema(verb string) string {
	return `{"type":"object","properties":{` +
		`"source":{"type":"string","description":"Absolute workspace path of the file to ` + verb + `"},` +
		`"destination":{"type":"string","description":"Absolute workspace path to ` + verb + ` it to"},` +
		`"overwrite":{"type":"boolean","default":false,"description":"Replace a file already at destination (default false: such a destination is refused)"}` +
		`},"required":["source","destination"]}`
}

var builtins = map[string]builtin{
	"ls": {
		description: "List the files and folders directly inside a workspace folder (default: the root '/'). " +
			"Folders end in '/'; files show their size in bytes. Use it to find your way around before reading or editing.",
		schema: `{"type":"object","properties":{` +
			`"path":{"type":"string","default":"/","description":"Absolute workspace path of the folder to list, e.g. /scratchpad"}` +
			`}}`,
		run: (*Workspace).ls,
	},
	"read_file": {
		description: "Read a window of lines from a text file in the workspace. Reads are text only: a binary file " +
			"(image, audio, video, PDF, …) is not read and answers a notice instead. The result starts with a header " +
			"'@@ lines a-b of n @@'; while lines remain it names the next offset to continue from. " +
			"offset is the 0-based first line, limit the number of lines (default 100).",
		schema: `{"type":"object","properties":{` +
			`"file_path":{"type":"string","description":"Absolute workspace path of the file, e.g. /scratchpad/notes.md"},` +
			`"offset":{"type":"number","default":0,"description":"0-based line to start reading from"},` +
			`"limit":{"type":"number","default":100,"description":"Maximum number of lines to read"}` +
			`},"required":["file_path"]}`,
		run: (*Workspace).readFile,
	},
	"write_file": {
		description: "Create a file in the workspace or replace it whole, creating folders as needed. For a binary file " +
			"type (images, audio, video, PDF, PowerPoint) pass content as base64.",
		schema: `{"type":"object","properties":{` +
			`"file_path":{"type":"string","description":"Absolute workspace path of the file, e.g. /scratchpad/report.md"},` +
			`"content":{"type":"string","description":"The complete new content of the file"}` +
			`},"required":["file_path","content"]}`,
		run: (*Workspace).writeFile,
	},
	"edit_file": {
		description: "Replace exact text in a workspace text file: old_string must occur exactly once unless replace_all " +
			"is true. Matching is literal and case-sensitive; new_string is inserted verbatim.",
		schema: `{"type":"object","properties":{` +
			`"file_path":{"type":"string","description":"Absolute workspace path of the file"},` +
			`"old_string":{"type":"string","description":"The exact text to replace"},` +
			`"new_string":{"type":"string","description":"The text to put in its place"},` +
			`"replace_all":{"type":"boolean","default":false,"description":"Replace every occurrence instead of exactly one"}` +
			`},"required":["file_path","old_string","new_string"]}`,
		run: (*Workspace).editFile,
	},
	"glob": {
		description: "Find files (not folders) whose path relative to a folder (default: the root) matches a glob " +
			"pattern: '*' stays within one folder, '**' spans folders, braces and classes work, dotfiles match. " +
			"Returns one absolute path per line.",
		schema: `{"type":"object","properties":{` +
			`"pattern":{"type":"string","description":"Glob pattern, e.g. **/*.md"},` +
			`"path":{"type":"string","default":"/","description":"Absolute workspace path of the folder to search"}` +
			`},"required":["pattern"]}`,
		run: (*Workspace).glob,
	},
	"grep": {
		description: "Search the text files under a folder (or one file) for a literal, case-sensitive string (not a " +
			"regular expression). output_mode 'content' shows matching lines with their numbers, 'files_with_matches' " +
			"the matching files, 'count' the matches per file.",
		schema: `{"type":"object","properties":{` +
			`"pattern":{"type":"string","description":"The literal text to search for"},` +
			`"path":{"type":"string","default":"/","description":"Absolute workspace path of the folder or file to search"},` +
			`"glob":{"type":["string","null"],"default":null,"description":"Only search files whose name matches this glob, e.g. *.md"},` +
			`"max_count":{"type":["integer","null"],"exclusiveMinimum":0,"default":null,"description":"Maximum number of matches in all (default 1000)"},` +
			`"output_mode":{"type":"string","enum":["files_with_matches","content","count"],"default":"content"}` +
			`},"required":["pattern"]}`,
		run: (*Workspace).grep,
	},
	"copy_file": {
		description: "Copy one file to another path byte for byte, text or binary (an image, a PDF, a .docx), without " +
			"reading it into the conversation. Creates the destination's folders; the source is left as it is. A file " +
			"already at the destination is refused unless overwrite is true. Folders cannot be copied.",
		schema: transferSchema("copy"),
		run:    (*Workspace).copyFile,
	},
	"move_file": {
		description: "Move one file to another path byte for byte, without reading it into the conversation. The " +
			"destination is written and checked before the source is removed, so a failure leaves a copy, never a loss. " +
			"A file already at the destination is refused unless overwrite is true. A file in a read-only folder cannot " +
			"be moved; copy it with copy_file instead. Folders cannot be moved.",
		schema: transferSchema("move"),
		run:    (*Workspace).moveFile,
	},
	"remove_file": {
		description: "Delete one file (never a folder). A file in a read-only folder cannot be removed.",
		schema: `{"type":"object","properties":{` +
			`"file_path":{"type":"string","description":"Absolute workspace path of the file to delete"}` +
			`},"required":["file_path"]}`,
		run: (*Workspace).removeFile,
	},
}

// Tools returns the names of the built-in file tools this package implements (BR-40),
// in a stable order: ls, read_file, write_file, edit_file, glob, grep, then the runtime
// file tools copy_file, move_file, remove_file (BR-22).
func Tools() []string { return append([]string(nil), toolNames...) }

// ToolSpec returns a tool's model-facing description and its input JSON Schema (an object
// schema with BR-22's and BR-42…BR-47's argument names, types and defaults). It returns ""
// and nil for a name Tools does not list.
func ToolSpec(tool string) (description string, inputSchema json.RawMessage) {
	b, ok := builtins[tool]
	if !ok {
		return "", nil
	}
	return b.description, json.RawMessage(b.schema)
}

// Call runs a built-in tool with the model's (or a script's) arguments and returns what
// the caller reads (BR-41…BR-47). Arguments failing the checks answer an error-status
// Result; store failures are classified into ordinary "Error…" results, never relaying a
// store's text or the session id (BR-49). The error is non-nil only for a tool name Tools
// does not list, or when ctx ends during the call (ctx.Err()).
func (w *Workspace) Call(ctx context.Context, tool string, args json.RawMessage) (Result, error) {
	b, ok := builtins[tool]
	if !ok {
		return Result{}, fmt.Errorf("workspace: unknown tool %q", tool)
	}
	a := newArgReader(args)
	if a.invalid() {
		return Result{Text: a.schemaError(tool, args), Error: true}, nil
	}
	text, err := b.run(w, ctx, a)
	switch {
	case err != nil:
		return Result{}, err
	case a.invalid():
		return Result{Text: a.schemaError(tool, args), Error: true}, nil
	}
	return Result{Text: text}, nil
}
