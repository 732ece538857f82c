// Package lambdafake is a local peer for the AWS Lambda Invoke API: an http.Handler speaking
// the REST-JSON wire protocol of service/lambda for Invoke only —
// POST /2015-03-31/functions/{FunctionName}/invocations with an optional ?Qualifier=, the
// headers X-Amz-Invocation-Type (RequestResponse, the default; Event; DryRun), X-Amz-Log-Type
// (None, Tail) and X-Amz-Client-Context (base64 JSON), and the payload as the body. Point a real
// *lambda.Client at it with BaseEndpoint; register each function's code with Register.
//
// Answers, as Lambda gives them:
//   - RequestResponse runs the handler and answers 200 with its response bytes and
//     X-Amz-Executed-Version: $LATEST. A failed handler (error, panic, deadline overrun, or a
//     response over MaxSyncPayload) still answers 200, with X-Amz-Function-Error: Unhandled and
//     a body {"errorMessage": …, "errorType": …} as the Go runtime reports it. Tail adds an
//     X-Amz-Log-Result (base64 START/END/REPORT lines; the fake captures no function output).
//   - Event answers 202 with an empty body at once and runs the handler in a goroutine. A failed
//     attempt (error, panic, deadline overrun) is retried after each of the retry delays in
//     turn (WithRetryDelays; by default 2 retries, after 1 and 2 minutes, as Lambda does).
//     Every attempt of one event sees the same AwsRequestID, the x-amzn-RequestId of the 202.
//   - DryRun validates as the others do and answers 204 without running anything.
//
// Errors come as the SDK decodes them: an X-Amzn-Errortype header and a {"Type": "User",
// "message"|"Message": …} body, the message member spelled as the SDK's model spells it:
//   - 404 ResourceNotFoundException (*types.ResourceNotFoundException): no function registered
//     under the name.
//   - 413 RequestEntityTooLargeException: a payload over MaxSyncPayload (RequestResponse,
//     DryRun) or MaxAsyncPayload (Event). This is the code Lambda really sends for Invoke; the
//     SDK's model names the 413 RequestTooLargeException, so the SDK does NOT decode it as
//     *types.RequestTooLargeException but as a smithy.APIError (*smithy.GenericAPIError) with
//     ErrorCode() "RequestEntityTooLargeException" (aws/aws-sdk-go#3080). Match on the code.
//   - 400 InvalidRequestContentException (*types.InvalidRequestContentException): a payload
//     that is not JSON, or an X-Amz-Client-Context that is not base64 JSON.
//   - 400 ValidationException: an invocation type or log type outside its enum, or a
//     FunctionName not of Lambda's name/ARN pattern. Lambda answers these with the unmodelled
//     ValidationException, which the SDK decodes as a *smithy.GenericAPIError.
//   - 400 InvalidParameterValueException (*types.InvalidParameterValueException): a qualifier
//     in FunctionName that differs from ?Qualifier=.
//   - 500 ServiceException (*types.ServiceException): an invocation after Close.
//
// Requests are checked in this order: invocation type, log type, name, size, function, JSON,
// client context. Any other path answers 404 UnknownOperationException.
//
// With WithStrictARNs, a FunctionName (or its ?Qualifier=) naming another partition, region
// or account than the fake's, or a qualifier other than $LATEST, answers 404
// ResourceNotFoundException "Function not found: <the ARN as named>", for Invoke and
// GetFunctionConfiguration alike: the function it names is not one the fake has.
//
// GetFunctionConfiguration (GET /2015-03-31/functions/{FunctionName}/configuration, an
// optional ?Qualifier=) answers a registered function's configuration as Lambda's JSON
// carries it: FunctionName, FunctionArn (unqualified, or with the qualifier asked for),
// Version $LATEST, State Active, LastUpdateStatus Successful, Runtime provided.al2023,
// PackageType Zip; 404 ResourceNotFoundException for a function not registered.
//
// The fake has one partition, region and account (aws, us-east-1, 123456789012). By default
// an ARN naming another is accepted as if it named these, and any qualifier runs the one
// registered handler and is recorded; WithStrictARNs refuses both as Lambda would (the fake
// has no versions or aliases). It has no concurrency limits, throttling, event age or
// dead-letter queue, and no recursive-loop detection. An empty payload reaches the handler as
// {}. A handler cut by its deadline cannot be killed: its goroutine runs on, its late return
// is ignored, and Close waits for it.
package lambdafake

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/google/uuid"
)

// Payload limits of Invoke, in bytes; a larger request body is refused with 413
// RequestEntityTooLargeException.
const (
	// MaxSyncPayload is the limit for RequestResponse (and DryRun) invocations: 6 MB.
	MaxSyncPayload = 6 * 1024 * 1024 // 6291456
	// MaxAsyncPayload is the limit for Event invocations: 1 MB. Lambda raised it from 256 KB
	// (262144 bytes) to 1 MB in 2025.
	MaxAsyncPayload = 1024 * 1024 // 1048576
)

// Region and Account are the region and account of every function the fake serves.
const (
	Region  = "us-east-1"
	Account = "123456789012"
)

// DefaultTimeout is the deadline each invocation gets unless WithTimeout says otherwise.
const DefaultTimeout = 15 * time.Minute

// Invocation types as sent in X-Amz-Invocation-Type.
const (
	RequestResponse = "RequestResponse"
	Event           = "Event"
	DryRun          = "DryRun"
)

// Handler is a function's code: the payload in, the response payload out. Its context carries
// a deadline (WithTimeout) and a *lambdacontext.LambdaContext, as a real Go handler's does. A
// nil response reaches a RequestResponse caller as null. An error or panic fails the
// invocation.
type Handler func(ctx context.Context, payload []byte) ([]byte, error)

// Invocation is one attempt to run a handler.
type Invocation struct {
	Function  string    // the function's name, as registered (no ARN prefix, no qualifier)
	Qualifier string    // the version or alias the caller named; "" when none
	Type      string    // RequestResponse or Event
	RequestID string    // the AwsRequestID the handler saw; one per event across its retries
	Payload   []byte    // the payload the handler received
	Attempt   int       // 1-based; above 1 only for retries of an Event
	Start     time.Time // when the handler was called
	End       time.Time // when the attempt ended (its return, or its deadline); zero while running
	Error     string    // the errorMessage of a failed attempt; "" when it succeeded or is running
	TimedOut  bool      // the handler had not returned by its deadline
}

// Option configures a Fake.
type Option func(*Fake)

// WithTimeout sets the function timeout: each invocation's context has the deadline
// start+d, and an invocation that has not returned by then has failed. d must be positive;
// the default is DefaultTimeout (15 minutes).
func WithTimeout(d time.Duration) Option {
	if d <= 0 {
		panic("lambdafake: WithTimeout needs a positive duration")
	}
	return func(f *Fake) { f.timeout = d }
}

// WithRetryDelays sets the retries of a failed Event invocation: one retry per delay, the
// n-th retry starting delays[n-1] after the previous attempt ended. No delays means no
// retries. The default is Lambda's: two retries, after 1 minute and after 2 minutes (Lambda
// allows 0 to 2 retries; the fake takes any number). Delays must not be negative.
func WithRetryDelays(delays ...time.Duration) Option {
	if slices.ContainsFunc(delays, func(d time.Duration) bool { return d < 0 }) {
		panic("lambdafake: WithRetryDelays needs delays >= 0")
	}
	delays = slices.Clone(delays)
	return func(f *Fake) { f.delays = delays }
}

// WithStrictARNs makes the fake refuse, as a function it does not have (404
// ResourceNotFoundException), a FunctionName whose ARN or partial ARN names another
// partition, region or account than aws, Region and Account, and any qualifier but $LATEST.
// Without it such names run the registered function as if they named it.
func WithStrictARNs() Option { return func(f *Fake) { f.strict = true } }

// Fake is the in-memory Lambda. The zero value is not usable; call New. It is safe for
// concurrent use.
type Fake struct {
	mux     *http.ServeMux
	timeout time.Duration
	delays  []time.Duration
	strict  bool

	wg sync.WaitGroup // attempts of events and handler goroutines, abandoned ones included

	mu          sync.Mutex
	handlers    map[string]Handler
	invocations []Invocation
	pending     int           // events accepted and not yet finished (running or awaiting a retry)
	idle        chan struct{} // closed when pending drops to 0
	timers      map[*time.Timer]struct{}
	closed      bool
}

// New returns a Fake with no functions.
func New(opts ...Option) *Fake {
	f := &Fake{
		mux:      http.NewServeMux(),
		timeout:  DefaultTimeout,
		delays:   []time.Duration{time.Minute, 2 * time.Minute},
		handlers: map[string]Handler{},
		timers:   map[*time.Timer]struct{}{},
	}
	for _, o := range opts {
		o(f)
	}
	f.mux.HandleFunc("POST /2015-03-31/functions/{name}/invocations", f.invoke)
	f.mux.HandleFunc("GET /2015-03-31/functions/{name}/configuration", f.configuration)
	f.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "UnknownOperationException", "Message",
			fmt.Sprintf("lambdafake serves only Invoke and GetFunctionConfiguration, not %s %s", r.Method, r.URL.Path))
	})
	return f
}

// ServeHTTP serves the wire protocol.
func (f *Fake) ServeHTTP(w http.ResponseWriter, r *http.Request) { f.mux.ServeHTTP(w, r) }

// FunctionARN returns the ARN of function name: arn:aws:lambda:us-east-1:123456789012:function:name.
func FunctionARN(name string) string {
	return "arn:aws:lambda:" + Region + ":" + Account + ":function:" + name
}

// Register serves function name with h, replacing any earlier handler; a retry still pending
// runs the handler registered when it starts. name is a function name or ARN as a client
// would send it as FunctionName (a qualifier in it is ignored); it panics on a name Lambda
// would refuse or a nil h.
func (f *Fake) Register(name string, h Handler) {
	n, ok := parseName(name)
	fn := n.name
	if !ok || h == nil {
		panic(fmt.Sprintf("lambdafake: Register(%q): invalid function name or nil handler", name))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handlers[fn] = h
}

// Invocations returns a copy of every attempt made so far, in the order the attempts started.
// An attempt still running has a zero End.
func (f *Fake) Invocations() []Invocation {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := slices.Clone(f.invocations)
	for i := range out {
		out[i].Payload = bytes.Clone(out[i].Payload)
	}
	return out
}

// Wait blocks until no Event invocation is running or awaiting a retry, and returns nil; or
// until ctx ends, and returns ctx.Err(). An attempt cut by its deadline counts as ended (its
// goroutine may still run; see Close).
func (f *Fake) Wait(ctx context.Context) error {
	for {
		f.mu.Lock()
		if f.pending == 0 {
			f.mu.Unlock()
			return nil
		}
		idle := f.idle
		f.mu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Close drops the retries not yet started and waits for every handler still running,
// including those already past their deadline. Invocations after Close answer 500
// ServiceException. Close may be called more than once.
func (f *Fake) Close() {
	f.mu.Lock()
	if !f.closed {
		f.closed = true
		for t := range f.timers {
			if t.Stop() {
				f.endEvent()
			} // else its callback runs, finds the Fake closed and ends the event
		}
		f.timers = nil
	}
	f.mu.Unlock()
	f.wg.Wait()
}

// call is one request to run a function.
type call struct {
	fn, qualifier, typ, requestID string
	payload                       []byte
	clientContext                 *lambdacontext.ClientContext // RequestResponse only
}

// outcome is how an attempt ended.
type outcome struct {
	out       []byte
	failed    bool
	errorType string
	errorMsg  string
	timedOut  bool
}

var errClosed = errors.New("lambdafake: closed")

func (f *Fake) invoke(w http.ResponseWriter, r *http.Request) {
	requestID := uuid.NewString()
	w.Header().Set("X-Amzn-Requestid", requestID)

	typ := cmp.Or(r.Header.Get("X-Amz-Invocation-Type"), RequestResponse)
	if typ != RequestResponse && typ != Event && typ != DryRun {
		writeError(w, http.StatusBadRequest, "ValidationException", "message", fmt.Sprintf(
			"1 validation error detected: Value '%s' at 'invocationType' failed to satisfy constraint: Member must satisfy enum value set: [Event, RequestResponse, DryRun]", typ))
		return
	}
	logType := r.Header.Get("X-Amz-Log-Type")
	if logType != "" && logType != "None" && logType != "Tail" {
		writeError(w, http.StatusBadRequest, "ValidationException", "message", fmt.Sprintf(
			"1 validation error detected: Value '%s' at 'logType' failed to satisfy constraint: Member must satisfy enum value set: [Tail, None]", logType))
		return
	}
	n, ok := f.functionName(w, r)
	if !ok {
		return
	}
	fn, qualifier := n.name, n.qualifier

	payload, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxSyncPayload+1))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig) || len(payload) > MaxSyncPayload:
		writeError(w, http.StatusRequestEntityTooLarge, "RequestEntityTooLargeException", "message",
			fmt.Sprintf("Request must be smaller than %d bytes for the InvokeFunction operation", MaxSyncPayload))
		return
	case err != nil:
		writeError(w, http.StatusBadRequest, "InvalidRequestContentException", "message", "Could not read request body: "+err.Error())
		return
	case typ == Event && len(payload) > MaxAsyncPayload:
		writeError(w, http.StatusRequestEntityTooLarge, "RequestEntityTooLargeException", "message",
			fmt.Sprintf("%d byte payload is too large for the Event invocation type (limit %d bytes)", len(payload), MaxAsyncPayload))
		return
	}

	if !f.found(w, n) {
		return
	}

	if len(payload) == 0 {
		payload = []byte("{}")
	} else if err := checkJSON(payload); err != nil {
		writeError(w, http.StatusBadRequest, "InvalidRequestContentException", "message",
			"Could not parse request body into json: Could not parse payload into json: "+err.Error())
		return
	}
	var cc *lambdacontext.ClientContext
	if h := r.Header.Get("X-Amz-Client-Context"); h != "" {
		if cc, err = decodeClientContext(h); err != nil {
			writeError(w, http.StatusBadRequest, "InvalidRequestContentException", "message",
				"Client context must be a valid Base64-encoded JSON object.")
			return
		}
	}

	c := call{fn: fn, qualifier: qualifier, typ: typ, requestID: requestID, payload: payload}
	switch typ {
	case DryRun:
		w.WriteHeader(http.StatusNoContent)
	case Event:
		f.mu.Lock()
		if f.closed {
			f.mu.Unlock()
			writeError(w, http.StatusInternalServerError, "ServiceException", "Message", errClosed.Error())
			return
		}
		f.pending++
		if f.pending == 1 {
			f.idle = make(chan struct{})
		}
		f.wg.Add(1)
		f.mu.Unlock()
		go f.attempt(c, 1)
		w.WriteHeader(http.StatusAccepted)
	default:
		c.clientContext = cc // Lambda passes the client context to synchronous invocations only
		f.respond(w, c, logType)
	}
}

// functionName reads the request's FunctionName and ?Qualifier=, answering a name Lambda
// would refuse (400) or a qualifier that contradicts the name's.
func (f *Fake) functionName(w http.ResponseWriter, r *http.Request) (fnName, bool) {
	raw := r.PathValue("name")
	n, ok := parseName(raw)
	if !ok {
		writeError(w, http.StatusBadRequest, "ValidationException", "message", fmt.Sprintf(
			"1 validation error detected: Value '%s' at 'functionName' failed to satisfy constraint: Member must satisfy regular expression pattern: %s", raw, namePattern))
		return n, false
	}
	if q := r.URL.Query().Get("Qualifier"); q != "" {
		if n.qualifier != "" && n.qualifier != q {
			writeError(w, http.StatusBadRequest, "InvalidParameterValueException", "message",
				"The derived qualifier from the function name does not match the specified qualifier.")
			return n, false
		}
		n.qualifier = q
	}
	return n, true
}

// found reports whether the fake has the function n names, answering 404
// ResourceNotFoundException when it has not: no handler under the name, or (WithStrictARNs)
// another partition, region or account, or a qualifier but $LATEST.
func (f *Fake) found(w http.ResponseWriter, n fnName) bool {
	f.mu.Lock()
	_, found := f.handlers[n.name]
	f.mu.Unlock()
	arn := FunctionARN(n.name)
	if f.strict && (n.partition != "" && n.partition != "aws" || n.region != "" && n.region != Region || n.account != "" && n.account != Account ||
		n.qualifier != "" && n.qualifier != "$LATEST") {
		found = false
		arn = "arn:" + cmp.Or(n.partition, "aws") + ":lambda:" + cmp.Or(n.region, Region) + ":" + cmp.Or(n.account, Account) + ":function:" + n.name
	}
	if !found {
		if n.qualifier != "" {
			arn += ":" + n.qualifier
		}
		writeError(w, http.StatusNotFound, "ResourceNotFoundException", "Message", "Function not found: "+arn)
	}
	return found
}

// configuration serves GetFunctionConfiguration.
func (f *Fake) configuration(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Amzn-Requestid", uuid.NewString())
	n, ok := f.functionName(w, r)
	if !ok || !f.found(w, n) {
		return
	}
	arn := FunctionARN(n.name)
	if n.qualifier != "" {
		arn += ":" + n.qualifier
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"FunctionName": n.name, "FunctionArn": arn, "Version": "$LATEST", "State": "Active", "LastUpdateStatus": "Successful",
		"Runtime": "provided.al2023", "Handler": "bootstrap", "PackageType": "Zip", "Timeout": int(f.timeout.Seconds()),
	})
}

// respond runs a RequestResponse invocation and writes its answer.
func (f *Fake) respond(w http.ResponseWriter, c call, logType string) {
	start := time.Now()
	o, err := f.run(c, 1)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "ServiceException", "Message", err.Error())
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Amz-Executed-Version", "$LATEST")
	if logType == "Tail" {
		log := fmt.Sprintf("START RequestId: %s Version: $LATEST\nEND RequestId: %s\nREPORT RequestId: %s\tDuration: %.2f ms\t\n",
			c.requestID, c.requestID, c.requestID, float64(time.Since(start).Microseconds())/1000)
		h.Set("X-Amz-Log-Result", base64.StdEncoding.EncodeToString([]byte(log)))
	}
	body := o.out
	if o.failed {
		h.Set("X-Amz-Function-Error", "Unhandled")
		body, _ = json.Marshal(struct {
			ErrorMessage string `json:"errorMessage"`
			ErrorType    string `json:"errorType,omitempty"`
		}{o.errorMsg, o.errorType})
	} else if body == nil {
		body = []byte("null")
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body) // a write error means the client went away
}

// attempt runs attempt n of an Event invocation and schedules the next one if it failed.
// The caller has counted it in f.wg.
func (f *Fake) attempt(c call, n int) {
	defer f.wg.Done()
	o, _ := f.run(c, n) // an accepted event runs even if Close began meanwhile
	f.mu.Lock()
	defer f.mu.Unlock()
	if !o.failed || n > len(f.delays) || f.closed {
		f.endEvent()
		return
	}
	var t *time.Timer
	t = time.AfterFunc(f.delays[n-1], func() {
		f.mu.Lock()
		delete(f.timers, t)
		if f.closed {
			f.endEvent()
			f.mu.Unlock()
			return
		}
		f.wg.Add(1)
		f.mu.Unlock()
		f.attempt(c, n+1)
	})
	f.timers[t] = struct{}{}
}

// endEvent counts an Event invocation as finished. f.mu is held.
func (f *Fake) endEvent() {
	f.pending--
	if f.pending == 0 {
		close(f.idle)
	}
}

// run calls the function's handler once, as attempt n, records the attempt and returns how it
// ended: at the handler's return or at its deadline, whichever comes first. A
// RequestResponse call fails with errClosed after Close.
func (f *Fake) run(c call, n int) (outcome, error) {
	f.mu.Lock()
	if f.closed && c.typ == RequestResponse {
		f.mu.Unlock()
		return outcome{}, errClosed
	}
	h := f.handlers[c.fn]
	start := time.Now()
	idx := len(f.invocations)
	f.invocations = append(f.invocations, Invocation{
		Function: c.fn, Qualifier: c.qualifier, Type: c.typ, RequestID: c.requestID,
		Payload: bytes.Clone(c.payload), Attempt: n, Start: start,
	})
	f.wg.Add(1)
	f.mu.Unlock()

	arn := FunctionARN(c.fn)
	if c.qualifier != "" {
		arn += ":" + c.qualifier
	}
	lc := &lambdacontext.LambdaContext{AwsRequestID: c.requestID, InvokedFunctionArn: arn}
	if c.clientContext != nil {
		lc.ClientContext = *c.clientContext
	}
	ctx, cancel := context.WithDeadline(context.Background(), start.Add(f.timeout))
	defer cancel()
	ctx = lambdacontext.NewContext(ctx, lc)

	done := make(chan outcome, 1) // buffered: an abandoned handler's late return must not block
	payload := bytes.Clone(c.payload)
	go func() {
		defer f.wg.Done()
		var o outcome
		defer func() {
			if p := recover(); p != nil {
				o = outcome{failed: true, errorMsg: fmt.Sprint(p), errorType: typeName(p)}
			}
			o.timedOut = ctx.Err() != nil // only the deadline can end ctx before run returns
			done <- o
		}()
		out, err := h(ctx, payload)
		if err != nil {
			o = outcome{failed: true, errorMsg: err.Error(), errorType: typeName(err)}
		} else {
			o = outcome{out: out}
		}
	}()

	var o outcome
	select {
	case o = <-done:
	case <-ctx.Done():
		o.timedOut = true
	}
	switch {
	case o.timedOut:
		o = outcome{failed: true, timedOut: true, errorType: "Sandbox.Timedout",
			errorMsg: fmt.Sprintf("RequestId: %s Error: Task timed out after %.2f seconds", c.requestID, f.timeout.Seconds())}
	case !o.failed && c.typ == RequestResponse && len(o.out) > MaxSyncPayload:
		o = outcome{failed: true, errorType: "Function.ResponseSizeTooLarge",
			errorMsg: fmt.Sprintf("Response payload size (%d bytes) exceeded maximum allowed payload size (%d bytes).", len(o.out), MaxSyncPayload)}
	}

	f.mu.Lock()
	inv := &f.invocations[idx]
	inv.End = time.Now()
	inv.Error = o.errorMsg
	inv.TimedOut = o.timedOut
	f.mu.Unlock()
	return o, nil
}

// namePattern is Lambda's pattern for Invoke's FunctionName.
const namePattern = `(arn:(aws[a-zA-Z-]*)?:lambda:)?([a-z]{2}(-gov)?-[a-z]+-\d{1}:)?(\d{12}:)?(function:)?([a-zA-Z0-9-_\.]+)(:(\$LATEST|[a-zA-Z0-9-_]+))?`

var nameRE = regexp.MustCompile(`^(?:arn:(aws[a-zA-Z-]*)?:lambda:)?(?:([a-z]{2}(?:-gov)?-[a-z]+-\d):)?(?:(\d{12}):)?(function:)?([a-zA-Z0-9._-]+)(?::(\$LATEST|[a-zA-Z0-9_-]+))?$`)

// fnName is a FunctionName's parts; partition, region and account are "" when it does not
// name them.
type fnName struct{ partition, region, account, name, qualifier string }

// parseName splits a FunctionName (name, partial ARN or ARN, each with an optional
// qualifier) into its parts.
func parseName(s string) (fnName, bool) {
	m := nameRE.FindStringSubmatch(s)
	if m == nil || len(m[5]) > 64 || len(s) > 170 {
		return fnName{}, false
	}
	return fnName{partition: m[1], region: m[2], account: m[3], name: m[5], qualifier: m[6]}, true
}

// checkJSON reports whether p is exactly one JSON value.
func checkJSON(p []byte) error {
	d := json.NewDecoder(bytes.NewReader(p))
	var v json.RawMessage
	if err := d.Decode(&v); err != nil {
		return err
	}
	if _, err := d.Token(); err != io.EOF {
		return errors.New("unexpected content after the JSON value")
	}
	return nil
}

func decodeClientContext(h string) (*lambdacontext.ClientContext, error) {
	raw, err := base64.StdEncoding.DecodeString(h)
	if err != nil {
		return nil, err
	}
	var cc lambdacontext.ClientContext
	if err := json.Unmarshal(raw, &cc); err != nil {
		return nil, err
	}
	return &cc, nil
}

// typeName names an error or panic value's type as the Go runtime's errorType does: the
// type's name, or the pointed-to type's name for a pointer.
func typeName(v any) string {
	t := reflect.TypeOf(v)
	if t == nil {
		return ""
	}
	if t.Kind() == reflect.Pointer {
		return t.Elem().Name()
	}
	return t.Name()
}

// writeError writes an error as Lambda does: the code in X-Amzn-Errortype, and a body with
// Type and the message under member, spelled as the SDK's model spells it for that code.
func writeError(w http.ResponseWriter, status int, code, member, message string) {
	typ := "User"
	if status >= 500 {
		typ = "Service"
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-Errortype", code)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"Type": typ, member: message})
}
