package httpapi

// BodyOf is the error body the HTTP contract gives err (errorResponse's table), and whether
// err is unexpected (its body then names nothing of it) — for a host printing the same typed
// record elsewhere, as the CLI's --json does.
func BodyOf(err error) (ErrorBody, bool) {
	_, body, internal := errorResponse(err)
	return body, internal
}
