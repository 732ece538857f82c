package workspace

// The texts the file tools answer with (spec 03 §5.3, §5.5: BR-20, BR-22, BR-41…BR-49):
// result lines, notices and error sentences that models and scripts read. They follow the
// reference implementation @archmax-ai/harness (MIT; see NOTICE) for compatibility, and
// scripts parse them (BR-21), so changing one is a contract change.

import (
	"strconv"
	"strings"
)

// Argument-check problems (BR-41; the wording is ours, the "✖ … → at" frame is the reference's).
const (
	problemNotInt      = "Invalid input: expected int, received number"
	problemNotPositive = "Too small: expected number to be >0"
	// kindMalformed stands for the received type of arguments that are not JSON at all.
	kindMalformed = "malformed JSON"
)

// problemType is BR-41's problem for an argument of the wrong JSON type.
func problemType(want, received string) string {
	return "Invalid input: expected " + want + ", received " + received
}

// problemOption is BR-41's problem for a value outside an enum: `… one of "a"|"b"`.
func problemOption(options []string) string {
	return `Invalid option: expected one of "` + strings.Join(options, `"|"`) + `"`
}

// Pieces of BR-41's error-status answer to arguments that failed the checks.
const (
	schemaProblem = "✖ "
	schemaAt      = "\n  → at "
	schemaClose   = "\n Please fix the error and try again."
)

// schemaOpen is BR-41's first line and the blank line after it.
func schemaOpen(tool, kwargs string) string {
	return "Error invoking tool '" + tool + "' with kwargs " + kwargs +
		" with error: Error: Received tool input did not match expected schema\n\n"
}

// Reasons that complete "Error: Cannot <verb> '<path>': <reason>." (BR-22, BR-44, BR-45,
// BR-49). A store failure is classified into one of the first three, never relayed, because
// a store's own error text can carry host paths or the session id.
const (
	reasonMissing   = "it does not exist"
	reasonDenied    = "permission was denied"
	reasonRefused   = "the store refused it"
	reasonReadOnly  = "it is served by a read-only mount"
	reasonOutside   = "it resolves outside the workspace root"
	reasonRoot      = "it names the workspace root, not a file"
	reasonDir       = "it is a directory; this tool works on one file"
	reasonNotBase64 = "its content is not valid base64, which a binary file needs" // BR-44
	reasonNotText   = "it is not a text file"                                      // BR-45
	reasonPattern   = "the pattern is not valid"                                   // BR-46 (ours)
	reasonSymlink   = "it is a symbolic link, which the workspace does not follow" // BR-22
	reasonCannot    = "the store serving it cannot do that"                        // BR-22
)

// reasonParentIsFile is BR-49's reason for a write below a file: "'<file>' is a file, not a folder".
func reasonParentIsFile(file string) string { return "'" + file + "' is a file, not a folder" }

// Verbs of "Error: Cannot <verb> …" (BR-43…BR-47).
const (
	verbRead   = "read"
	verbWrite  = "write"
	verbEdit   = "edit"
	verbSearch = "search"
	verbCopy   = "copy"
	verbMove   = "move"
	verbRemove = "remove"
)

// cannot is "Error: Cannot <verb> '<path as passed>': <reason>." (BR-21, BR-22, BR-43…BR-47).
func cannot(verb, arg, why string) string {
	return "Error: Cannot " + verb + " '" + arg + "': " + why + "."
}

// cannotTo is BR-22's refusal of a destination: "Error: Cannot <verb> to '<path>': <reason>.".
func cannotTo(verb, p, why string) string {
	return "Error: Cannot " + verb + " to '" + p + "': " + why + "."
}

// fileNotFound is BR-43/BR-45's answer for a missing file or a folder.
func fileNotFound(arg string) string { return "Error: File '" + arg + "' not found" }

// truncLine ends a cut ls, glob or grep result (spec 03 §5.5 TRUNC, BR-42, BR-46, BR-47).
const truncLine = "... [results truncated, try being more specific with your parameters]"

// listError is BR-42's store-failure answer: "Error listing files: <reason>".
func listError(why string) string { return "Error listing files: " + why }

// noFilesIn is BR-42's answer for an empty or missing folder.
func noFilesIn(arg string) string { return "No files found in " + arg }

// resultPath is a canonical path as results show it: absolute, "/<path>" (BR-41).
func resultPath(p string) string { return "/" + p }

// lsDir is BR-42's listing line of a folder: "/<path>/ (directory)".
func lsDir(p string) string { return resultPath(p) + "/ (directory)" }

// lsFile is BR-42's listing line of a file of known size: "/<path> (<n> bytes)"; a file of
// size 0 or unknown size is the bare resultPath.
func lsFile(p string, size int64) string {
	return resultPath(p) + " (" + strconv.FormatInt(size, 10) + " bytes)"
}

// binaryNotice is BR-20's answer to reading a binary file; detail is "<type>[, <size>]".
// The path is shown as passed, without leading slashes.
func binaryNotice(arg, detail string) string {
	return "Error: '" + strings.TrimLeft(arg, "/") + "' is a binary file (" + detail + ") and was not read; read_file returns text files only."
}

// binaryDetail is BR-20's "<type>, <size>" for content that came back as bytes.
func binaryDetail(mimeType string, size int64) string { return mimeType + ", " + formatSize(size) }

// octetStream is BR-20's type of a binary read whose declared type is a text type (NUL-bearing
// content); such a notice has no size.
const octetStream = "application/octet-stream"

// formatSize renders a byte count per OQ-13 (BR-20's <size>): "<n> B" below 1024, "<x.y> KB"
// below 1 MiB, otherwise "<x.y> MB" (one decimal, halves rounded up as JavaScript's toFixed
// does here).
func formatSize(n int64) string {
	switch {
	case n < 1024:
		return strconv.FormatInt(n, 10) + " B"
	case n < 1024*1024:
		return tenths(n, 1024) + " KB"
	default:
		return tenths(n, 1024*1024) + " MB"
	}
}

// emptyFileReminder is BR-43's whole answer for an empty or whitespace-only file.
const emptyFileReminder = "System reminder: File exists but has empty contents"

// offsetNotice is BR-43's line above the header for a negative offset (as JavaScript prints it).
func offsetNotice(offset string) string {
	return "[Requested offset " + offset + " is before the start of the file; read from line 1 instead.]\n"
}

// offsetBeyondEnd is BR-43's answer for an offset at or past the last line.
func offsetBeyondEnd(offset, total int) string {
	return "Error: Line offset " + strconv.Itoa(offset) + " exceeds file length (" + strconv.Itoa(total) + " lines)"
}

// sizeLimitNotice is BR-43's notice above a window cut to the 80,000-character cap.
func sizeLimitNotice(arg string) string {
	return "[Output was truncated due to size limits. The file content is very large. Consider reformatting the file to make it easier to navigate. For example, if this is JSON, use execute(command='jq . " +
		arg + "') to pretty-print it with line breaks. For other formats, you can use appropriate formatting tools to split long lines.]\n"
}

// headerClose ends a read_file header and its line (BR-43).
const headerClose = " @@\n"

// appendRange appends BR-43's "@@ lines <first>-<last> of <total>".
func appendRange(b []byte, first, last, total int) []byte {
	b = append(b, "@@ lines "...)
	b = strconv.AppendInt(b, int64(first), 10)
	b = append(b, '-')
	b = strconv.AppendInt(b, int64(last), 10)
	b = append(b, " of "...)
	return strconv.AppendInt(b, int64(total), 10)
}

// appendNextOffset appends BR-43's " | next offset <next>", present while lines remain.
func appendNextOffset(b []byte, next int) []byte {
	b = append(b, " | next offset "...)
	return strconv.AppendInt(b, int64(next), 10)
}

// limitZeroHeader is BR-43's whole answer for limit 0: "@@ lines <n>-<n> @@" LF (a reference quirk).
func limitZeroHeader(line int) string {
	n := strconv.Itoa(line)
	return "@@ lines " + n + "-" + n + headerClose
}

// sizeCutHeader is BR-43's header of a window cut to whole lines:
// "@@ lines <first>-<last> of <total> | next offset <last> | truncated due to size @@" LF.
func sizeCutHeader(first, last, total int) string {
	return string(appendNextOffset(appendRange(nil, first, last, total), last)) + " | truncated due to size" + headerClose
}

// midLineHeader is BR-43's header of a first line cut mid-line:
// "@@ lines <line>-<line> of <total> | truncated mid-line | <shown> of <length> chars @@" LF.
func midLineHeader(line, total int, shown, length string) string {
	return string(appendRange(nil, line, line, total)) + " | truncated mid-line | " + shown + " of " + length + " chars" + headerClose
}

// wrote is BR-44's success line.
func wrote(arg string) string { return "Successfully wrote to '" + arg + "'" }

// copied and moved are BR-22's success lines: "Copied '<from>' to '<to>' (<size>)." (OQ-13 size).
func copied(from, to string, size int64) string {
	return "Copied '" + from + "' to '" + to + "' (" + formatSize(size) + ")."
}

func moved(from, to string, size int64) string {
	return "Moved '" + from + "' to '" + to + "' (" + formatSize(size) + ")."
}

// removed is BR-22's success line of remove_file.
func removed(p string) string { return "Removed '" + p + "'." }

// ontoItself is BR-22's refusal of a copy or move whose two paths are one file.
func ontoItself(verb, from string) string {
	return "Error: Cannot " + verb + " '" + from + "' onto itself: the source and the destination are the same file."
}

// alreadyThere is BR-22's refusal of an occupied destination without overwrite.
func alreadyThere(verb, to string) string {
	return "Error: Cannot " + verb + " to '" + to + "': a file is already there. Pass overwrite: true to replace it, or choose another destination."
}

// moveFromReadOnly is BR-22's refusal of a move out of a read-only mount.
func moveFromReadOnly(from string) string {
	return "Error: Cannot move '" + from + "': it is served by a read-only mount, so it cannot be removed. Use copy_file to copy it instead."
}

// copiedNotRemoved is BR-22's answer to a move whose source could not be removed after the
// destination was written and verified.
func copiedNotRemoved(from, to, why string) string {
	return "Error: Copied '" + from + "' to '" + to + "', but could not remove '" + from + "': " + why + ". Both files now exist."
}

// notKept is BR-22's answer when the destination read back differs from the source; tail
// is nothingKept or leftAsWritten.
func notKept(verb, to, tail string) string {
	return cannotTo(verb, to, "the store serving it did not keep the file's bytes — what it holds differs from what was written") + tail
}

// nothingKept ends notKept when the destination the operation created was removed again.
const nothingKept = " Nothing was kept."

// leftAsWritten ends notKept when the destination existed before or could not be removed.
func leftAsWritten(to string) string { return " '" + to + "' was left as the store wrote it." }

// offloadPointer is what the model reads instead of a tool result offloaded to p
// (ours): the path, the size in characters and how to page through it.
func offloadPointer(p string, chars int) string {
	return "This tool result was too large to show here (" + strconv.Itoa(chars) + " characters), so it was saved to " +
		resultPath(p) + ". Read it with read_file, using offset and limit to page through it."
}

// emptyOldString is BR-45's answer to an empty old_string on a file with content.
const emptyOldString = "Error: oldString cannot be empty when file has content"

// stringNotFound is BR-45's answer when old_string does not occur.
func stringNotFound(old string) string { return "Error: String not found in file: '" + old + "'" }

// multipleOccurrences is BR-45's answer when old_string occurs n > 1 times without replace_all.
func multipleOccurrences(old string, n int) string {
	return "Error: String '" + old + "' has multiple occurrences (appears " + strconv.Itoa(n) +
		" times) in file. Use replace_all=True to replace all instances, or provide a more specific string with surrounding context."
}

// replaced is BR-45's success line.
func replaced(n int, arg string) string {
	return "Successfully replaced " + strconv.Itoa(n) + " occurrence(s) in '" + arg + "'"
}

// findError is BR-46's failure answer: "Error finding files: <reason>".
func findError(why string) string { return "Error finding files: " + why }

// noFilesMatching is BR-46's answer when nothing matches.
func noFilesMatching(pattern string) string {
	return "No files found matching pattern '" + pattern + "'"
}

// noMatches is BR-47's answer when nothing matches.
func noMatches(pattern string) string { return "No matches found for pattern '" + pattern + "'" }

// grepCount is BR-47's count-mode line "/<path>: <n>" (files_with_matches shows resultPath).
func grepCount(p string, n int) string { return resultPath(p) + ": " + strconv.Itoa(n) }

// grepFileHead is BR-47's content-mode line "/<path>:" above the file's matches.
func grepFileHead(p string) string { return resultPath(p) + ":" }

// grepMatch is BR-47's content-mode line "  <line>: <text>" of one match.
func grepMatch(n int, text string) string { return "  " + strconv.Itoa(n) + ": " + text }

// capNote follows a grep result whose max_count cap was hit (BR-47, GOV-57).
const capNote = "\n\nNote: the search stopped early because it hit the maximum match count. The matches above are valid but incomplete. Narrow the search (a more specific pattern or a narrower path), or raise max_count, to see the rest."

// pathEscape is the message of WorkspacePathEscapeError (GOV-30, GOV-56).
func pathEscape(p string) string { return "path '" + p + "' resolves outside the workspace root" }

// write_todos (BR-48).
const (
	todosUpdated = "Updated todo list to "
	// TodosParallel answers every write_todos call of a response that calls it more than once.
	TodosParallel = "Error: The `write_todos` tool should never be called multiple times in parallel. Please call it only once per model invocation to update the todo list."
)
