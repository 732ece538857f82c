package workspace

import (
	"encoding/json"
	"strconv"
)

// Todo is one item of the session's plan (write_todos, BR-48); extra fields are dropped.
type Todo struct {
	Content string `json:"content"`
	Status  string `json:"status"`
}

// todoStatuses are the statuses a plan item may have.
var todoStatuses = []string{"pending", "in_progress", "completed"}

// ParseTodos checks write_todos({ todos: {content, status}[] }) the way every tool's
// arguments are checked (BR-41). It returns the plan, or the error-status text the caller
// answers with.
func ParseTodos(raw json.RawMessage) ([]Todo, string) {
	a := newArgReader(raw)
	var items []json.RawMessage
	if v, ok := a.raw["todos"]; !ok {
		a.fail("todos", problemType("array", "undefined"))
	} else if jsonKind(v) != "array" || json.Unmarshal(v, &items) != nil {
		a.fail("todos", problemType("array", jsonKind(v)))
	}
	todos := make([]Todo, 0, len(items))
	for i, it := range items {
		at := "todos." + strconv.Itoa(i)
		item := newArgReader(it)
		if item.invalid() {
			a.fail(at, item.problems[0].msg)
			continue
		}
		content, _ := item.str("content", true)
		status := item.enum("status", "", todoStatuses...)
		if _, ok := item.raw["status"]; !ok {
			item.fail("status", problemOption(todoStatuses))
		}
		for _, p := range item.problems {
			a.fail(at+"."+p.at, p.msg)
		}
		todos = append(todos, Todo{Content: content, Status: status})
	}
	if a.invalid() {
		return nil, a.schemaError("write_todos", raw)
	}
	return todos, ""
}

// TodosResult is write_todos' answer: `Updated todo list to <todos as compact JSON>`.
func TodosResult(todos []Todo) string {
	if todos == nil {
		todos = []Todo{}
	}
	b, _ := json.Marshal(todos)
	return todosUpdated + string(b)
}
