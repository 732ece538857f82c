// Package sqsfake is a local peer for Amazon SQS: an http.Handler speaking the AWS JSON 1.0
// wire protocol of service/sqs (POST /, Content-Type application/x-amz-json-1.0,
// X-Amz-Target AmazonSQS.<Operation>, the input as a JSON body) for the operations a
// dead-letter consumer needs:
//
//   - CreateQueue {QueueName, Attributes{VisibilityTimeout}} → {QueueUrl}; an existing name
//     answers its URL (the attributes must match, else QueueNameExists).
//   - GetQueueUrl {QueueName} → {QueueUrl}.
//   - SendMessage {QueueUrl, MessageBody, DelaySeconds, MessageAttributes} → {MessageId,
//     MD5OfMessageBody, MD5OfMessageAttributes}.
//   - ReceiveMessage {QueueUrl, MaxNumberOfMessages (1–10, default 1), VisibilityTimeout
//     (seconds, default the queue's), WaitTimeSeconds (0–20), AttributeNames /
//     MessageSystemAttributeNames, MessageAttributeNames} → {Messages: [{MessageId,
//     ReceiptHandle, Body, MD5OfBody, Attributes, MessageAttributes, MD5OfMessageAttributes}]}.
//   - DeleteMessage {QueueUrl, ReceiptHandle}.
//   - ChangeMessageVisibility {QueueUrl, ReceiptHandle, VisibilityTimeout}.
//
// Point a real *sqs.Client at it with BaseEndpoint (the SDK verifies MD5OfBody and
// MD5OfMessageBody against what it sent and received; the fake computes both, and
// MD5OfMessageAttributes by SQS's algorithm).
//
// Visibility, as SQS has it: a received message is invisible for the visibility timeout and
// visible again after it, with a new receipt handle on every receive and
// ApproximateReceiveCount counting them. Time comes from the clock (WithClock; time.Now by
// default), so a test moves past a timeout by advancing its clock. Only the long poll of
// WaitTimeSeconds waits in real time, for a send or the wait's end (WithMaxWait caps it).
// Deleting with a receipt handle older than the message's latest succeeds and deletes
// nothing — SQS says such a message "might not be deleted"; the fake always keeps it.
// Deleting a message already deleted succeeds.
//
// Errors come as the SDK decodes them: HTTP 400 with a body {"__type":
// "com.amazonaws.sqs#<Shape>", "message": …} and the X-Amzn-Query-Error header
// ("<code>;Sender") of SQS's query compatibility, so errors.As finds *types.QueueDoesNotExist
// (code AWS.SimpleQueueService.NonExistentQueue), *types.ReceiptHandleIsInvalid,
// *types.MessageNotInflight, *types.InvalidMessageContents, *types.QueueNameExists; a bad
// parameter is a generic InvalidParameterValue or MissingParameter, an unknown operation
// UnknownOperationException, a request not of the JSON 1.0 protocol 400 UnsupportedProtocol.
//
// Standard queues only, one region and account (us-east-1, 123456789012; a queue URL's host
// is ignored, its path /<account>/<name> is read). Not modelled: FIFO, batches, purge,
// redrive policies, retention, queue attributes other than VisibilityTimeout, permissions.
// Messages are returned oldest first.
package sqsfake

import (
	"bytes"
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
)

// Region and Account are the region and account of every queue the fake serves.
const (
	Region  = "us-east-1"
	Account = "123456789012"
)

// Limits SQS enforces, as the fake does.
const (
	// MaxMessageSize is the largest message, body and attributes together: 1 MiB (SQS
	// raised it from 256 KiB in 2025).
	MaxMessageSize = 1024 * 1024
	// DefaultVisibilityTimeout is a new queue's visibility timeout, in seconds.
	DefaultVisibilityTimeout = 30
	// MaxVisibilityTimeout is the longest visibility timeout: 12 hours, in seconds.
	MaxVisibilityTimeout = 12 * 60 * 60
	// MaxWaitSeconds is the longest long poll.
	MaxWaitSeconds = 20
	// MaxAttributes is the most message attributes a message carries.
	MaxAttributes = 10
)

// Attribute is a message attribute: DataType String, Number or Binary (each optionally
// followed by ".<custom>"), with StringValue or BinaryValue set to match.
type Attribute struct {
	DataType    string
	StringValue string
	BinaryValue []byte
}

// Message is a stored message as Messages reports it.
type Message struct {
	ID           string
	Body         string
	Attributes   map[string]Attribute
	Sent         time.Time
	ReceiveCount int
	Visible      bool // receivable now (not in flight, its delay over)
}

// Option configures a Fake.
type Option func(*Fake)

// WithClock sets the clock visibility timeouts, delays and timestamps are measured on.
func WithClock(now func() time.Time) Option { return func(f *Fake) { f.now = now } }

// WithMaxWait caps the real-time wait of a long poll (WaitTimeSeconds); 0 answers an
// empty receive at once.
func WithMaxWait(d time.Duration) Option { return func(f *Fake) { f.maxWait = d } }

// Fake is the in-memory SQS. The zero value is not usable; call New. It is safe for
// concurrent use.
type Fake struct {
	now     func() time.Time
	maxWait time.Duration

	mu     sync.Mutex
	queues map[string]*queue
	sent   chan struct{} // closed and replaced on every send (wakes long polls)
}

type queue struct {
	name       string
	visibility int // seconds
	messages   []*message
	handles    map[string]*message // every receipt handle issued, to its message
}

type message struct {
	id           string
	body         string
	attrs        map[string]Attribute
	sent         time.Time
	visibleAt    time.Time
	receiveCount int
	firstReceive time.Time
	receipt      string // the latest receipt handle ("" before the first receive)
	deleted      bool
}

// New returns a Fake with no queues.
func New(opts ...Option) *Fake {
	f := &Fake{now: time.Now, maxWait: MaxWaitSeconds * time.Second, queues: map[string]*queue{}, sent: make(chan struct{})}
	for _, o := range opts {
		o(f)
	}
	return f
}

var queueNameRe = regexp.MustCompile(`^[A-Za-z0-9_-]{1,80}$`)

// CreateQueue creates queue name with the default visibility timeout (nothing when it
// exists); it panics on a name SQS would refuse.
func (f *Fake) CreateQueue(name string) {
	if !queueNameRe.MatchString(name) {
		panic(fmt.Sprintf("sqsfake: CreateQueue(%q): not a queue name", name))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.queues[name] == nil {
		f.queues[name] = &queue{name: name, visibility: DefaultVisibilityTimeout, handles: map[string]*message{}}
	}
}

// QueueARN is the ARN of queue name: arn:aws:sqs:us-east-1:123456789012:name.
func QueueARN(name string) string { return "arn:aws:sqs:" + Region + ":" + Account + ":" + name }

// Messages returns the messages queue name holds (deleted ones left out), oldest first.
func (f *Fake) Messages(name string) []Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.queues[name]
	if q == nil {
		return nil
	}
	now := f.now()
	var out []Message
	for _, m := range q.messages {
		if m.deleted {
			continue
		}
		attrs := map[string]Attribute{}
		for k, v := range m.attrs {
			attrs[k] = Attribute{DataType: v.DataType, StringValue: v.StringValue, BinaryValue: slices.Clone(v.BinaryValue)}
		}
		out = append(out, Message{ID: m.id, Body: m.body, Attributes: attrs, Sent: m.sent, ReceiveCount: m.receiveCount, Visible: !now.Before(m.visibleAt)})
	}
	return out
}

// ServeHTTP serves the wire protocol.
func (f *Fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Amzn-Requestid", uuid.NewString())
	target := r.Header.Get("X-Amz-Target")
	if r.Method != http.MethodPost || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-amz-json-1.0") || !strings.HasPrefix(target, "AmazonSQS.") {
		writeError(w, apiError{code: "UnsupportedProtocol", msg: "sqsfake speaks only the AWS JSON 1.0 protocol (POST, application/x-amz-json-1.0, X-Amz-Target: AmazonSQS.<Operation>)"})
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 2*MaxMessageSize))
	if err != nil {
		writeError(w, *invalid("could not read the request body: %v", err))
		return
	}
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	base := "http://" + r.Host
	var out any
	var aerr *apiError
	switch op := strings.TrimPrefix(target, "AmazonSQS."); op {
	case "CreateQueue":
		out, aerr = decodeAnd(body, func(in *createQueueIn) (any, *apiError) { return f.createQueue(base, in) })
	case "GetQueueUrl":
		out, aerr = decodeAnd(body, func(in *getQueueURLIn) (any, *apiError) { return f.getQueueURL(base, in) })
	case "SendMessage":
		out, aerr = decodeAnd(body, f.sendMessage)
	case "ReceiveMessage":
		out, aerr = decodeAnd(body, func(in *receiveIn) (any, *apiError) { return f.receive(r, in) })
	case "DeleteMessage":
		out, aerr = decodeAnd(body, f.deleteMessage)
	case "ChangeMessageVisibility":
		out, aerr = decodeAnd(body, f.changeVisibility)
	default:
		aerr = &apiError{code: "UnknownOperationException", msg: "sqsfake does not serve " + op}
	}
	if aerr != nil {
		writeError(w, *aerr)
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	_ = json.NewEncoder(w).Encode(out)
}

// decodeAnd decodes the JSON input into a new In and calls do with it.
func decodeAnd[In any](body []byte, do func(*In) (any, *apiError)) (any, *apiError) {
	in := new(In)
	if err := json.Unmarshal(body, in); err != nil {
		return nil, &apiError{code: "SerializationException", msg: "the request body is not the operation's JSON input: " + err.Error()}
	}
	return do(in)
}

// apiError is an SQS error: its shape name (the __type), the query-compatible code (when
// it differs from the shape name) and the message.
type apiError struct {
	code, query, msg string
}

func invalid(format string, a ...any) *apiError {
	return &apiError{code: "InvalidParameterValue", msg: fmt.Sprintf(format, a...)}
}

func missing(name string) *apiError {
	return &apiError{code: "MissingParameter", msg: "The request must contain the parameter " + name + "."}
}

func writeError(w http.ResponseWriter, e apiError) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("X-Amzn-Query-Error", cmpOr(e.query, e.code)+";Sender")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": "com.amazonaws.sqs#" + e.code, "message": e.msg})
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func noQueue() *apiError {
	return &apiError{code: "QueueDoesNotExist", query: "AWS.SimpleQueueService.NonExistentQueue", msg: "The specified queue does not exist."}
}

// lookup finds the queue a QueueUrl names (f.mu held).
func (f *Fake) lookup(url *string) (*queue, *apiError) {
	if url == nil || *url == "" {
		return nil, missing("QueueUrl")
	}
	parts := strings.Split(strings.TrimRight(*url, "/"), "/")
	if len(parts) < 2 || parts[len(parts)-2] != Account {
		return nil, noQueue()
	}
	q := f.queues[parts[len(parts)-1]]
	if q == nil {
		return nil, noQueue()
	}
	return q, nil
}

func (q *queue) url(base string) string { return base + "/" + Account + "/" + q.name }

type createQueueIn struct {
	QueueName  *string
	Attributes map[string]string
}

func (f *Fake) createQueue(base string, in *createQueueIn) (any, *apiError) {
	if in.QueueName == nil {
		return nil, missing("QueueName")
	}
	if !queueNameRe.MatchString(*in.QueueName) {
		return nil, invalid("Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length")
	}
	vis := DefaultVisibilityTimeout
	for k, v := range in.Attributes {
		if k != "VisibilityTimeout" {
			continue // not modelled
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > MaxVisibilityTimeout {
			return nil, &apiError{code: "InvalidAttributeValue", msg: "Invalid value for the parameter VisibilityTimeout."}
		}
		vis = n
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.queues[*in.QueueName]
	switch {
	case q == nil:
		q = &queue{name: *in.QueueName, visibility: vis, handles: map[string]*message{}}
		f.queues[q.name] = q
	case q.visibility != vis:
		return nil, &apiError{code: "QueueNameExists", query: "QueueAlreadyExists", msg: "A queue already exists with the same name and a different value for attribute VisibilityTimeout"}
	}
	return map[string]string{"QueueUrl": q.url(base)}, nil
}

type getQueueURLIn struct {
	QueueName              *string
	QueueOwnerAWSAccountId *string
}

func (f *Fake) getQueueURL(base string, in *getQueueURLIn) (any, *apiError) {
	if in.QueueName == nil || *in.QueueName == "" {
		return nil, missing("QueueName")
	}
	if in.QueueOwnerAWSAccountId != nil && *in.QueueOwnerAWSAccountId != Account {
		return nil, noQueue()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.queues[*in.QueueName]
	if q == nil {
		return nil, noQueue()
	}
	return map[string]string{"QueueUrl": q.url(base)}, nil
}

// wireAttribute is a MessageAttributeValue on the wire (BinaryValue base64, as
// encoding/json does []byte).
type wireAttribute struct {
	DataType         string   `json:"DataType"`
	StringValue      *string  `json:"StringValue,omitempty"`
	BinaryValue      []byte   `json:"BinaryValue,omitempty"`
	StringListValues []string `json:"StringListValues,omitempty"`
	BinaryListValues [][]byte `json:"BinaryListValues,omitempty"`
}

type sendIn struct {
	QueueUrl          *string
	MessageBody       *string
	DelaySeconds      int
	MessageAttributes map[string]wireAttribute
}

var attrNameRe = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,256}$`)

// validBody reports whether s holds only the characters SQS accepts: #x9, #xA, #xD,
// #x20–#xD7FF, #xE000–#xFFFD, #x10000–#x10FFFF.
func validBody(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		switch {
		case r == 0x9 || r == 0xA || r == 0xD, r >= 0x20 && r <= 0xD7FF, r >= 0xE000 && r <= 0xFFFD, r >= 0x10000 && r <= 0x10FFFF:
		default:
			return false
		}
	}
	return true
}

func (f *Fake) sendMessage(in *sendIn) (any, *apiError) {
	if in.MessageBody == nil || *in.MessageBody == "" {
		return nil, missing("MessageBody")
	}
	if !validBody(*in.MessageBody) {
		return nil, &apiError{code: "InvalidMessageContents", msg: "Invalid characters found. Valid unicode characters are #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF"}
	}
	if in.DelaySeconds < 0 || in.DelaySeconds > 900 {
		return nil, invalid("Value %d for parameter DelaySeconds is invalid. Reason: must be between 0 and 900, if provided.", in.DelaySeconds)
	}
	if len(in.MessageAttributes) > MaxAttributes {
		return nil, invalid("Number of message attributes [%d] exceeds the allowed maximum [%d].", len(in.MessageAttributes), MaxAttributes)
	}
	size := len(*in.MessageBody)
	attrs := map[string]Attribute{}
	for name, a := range in.MessageAttributes {
		base, _, _ := strings.Cut(a.DataType, ".")
		switch {
		case !attrNameRe.MatchString(name) || strings.HasPrefix(strings.ToLower(name), "aws.") || strings.HasPrefix(strings.ToLower(name), "amazon."):
			return nil, invalid("Message attribute name '%s' is invalid.", name)
		case a.StringListValues != nil || a.BinaryListValues != nil:
			return nil, invalid("Message attribute list values are not supported.")
		case (base == "String" || base == "Number") && a.StringValue == nil:
			return nil, invalid("Message attribute '%s' must contain a non-empty value of message attribute type '%s'.", name, a.DataType)
		case base == "Binary" && a.BinaryValue == nil:
			return nil, invalid("Message attribute '%s' must contain a non-empty value of message attribute type '%s'.", name, a.DataType)
		case base != "String" && base != "Number" && base != "Binary":
			return nil, invalid("The type of message (user) attribute '%s' is invalid. You must use only the following supported type prefixes: Binary, Number, String.", name)
		}
		v := Attribute{DataType: a.DataType, BinaryValue: slices.Clone(a.BinaryValue)}
		if a.StringValue != nil {
			v.StringValue = *a.StringValue
		}
		if base == "Number" {
			if _, err := strconv.ParseFloat(v.StringValue, 64); err != nil {
				return nil, invalid("Can't cast the value of message (user) attribute '%s' to a number.", name)
			}
		}
		attrs[name] = v
		size += len(name) + len(a.DataType) + len(v.StringValue) + len(v.BinaryValue)
	}
	if size > MaxMessageSize {
		return nil, invalid("One or more parameters are invalid. Reason: Message must be shorter than %d bytes.", MaxMessageSize)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	q, aerr := f.lookup(in.QueueUrl)
	if aerr != nil {
		return nil, aerr
	}
	now := f.now()
	m := &message{id: uuid.NewString(), body: *in.MessageBody, attrs: attrs, sent: now, visibleAt: now.Add(time.Duration(in.DelaySeconds) * time.Second)}
	q.messages = append(q.messages, m)
	close(f.sent)
	f.sent = make(chan struct{})
	out := map[string]string{"MessageId": m.id, "MD5OfMessageBody": md5Hex([]byte(m.body))}
	if len(attrs) > 0 {
		out["MD5OfMessageAttributes"] = attributesMD5(attrs)
	}
	return out, nil
}

type receiveIn struct {
	QueueUrl                    *string
	MaxNumberOfMessages         *int
	VisibilityTimeout           *int
	WaitTimeSeconds             *int
	AttributeNames              []string
	MessageSystemAttributeNames []string
	MessageAttributeNames       []string
}

// systemAttributes are the message system attributes the fake models.
var systemAttributes = []string{"ApproximateFirstReceiveTimestamp", "ApproximateReceiveCount", "SenderId", "SentTimestamp"}

type wireMessage struct {
	MessageId              string                   `json:"MessageId"`
	ReceiptHandle          string                   `json:"ReceiptHandle"`
	Body                   string                   `json:"Body"`
	MD5OfBody              string                   `json:"MD5OfBody"`
	Attributes             map[string]string        `json:"Attributes,omitempty"`
	MessageAttributes      map[string]wireAttribute `json:"MessageAttributes,omitempty"`
	MD5OfMessageAttributes string                   `json:"MD5OfMessageAttributes,omitempty"`
}

func (f *Fake) receive(r *http.Request, in *receiveIn) (any, *apiError) {
	maxN := 1
	if in.MaxNumberOfMessages != nil {
		maxN = *in.MaxNumberOfMessages
	}
	if maxN < 1 || maxN > 10 {
		return nil, invalid("Value %d for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10, if provided.", maxN)
	}
	if in.VisibilityTimeout != nil && (*in.VisibilityTimeout < 0 || *in.VisibilityTimeout > MaxVisibilityTimeout) {
		return nil, invalid("Value %d for parameter VisibilityTimeout is invalid. Reason: Must be between 0 and 43200, if provided.", *in.VisibilityTimeout)
	}
	wait := 0
	if in.WaitTimeSeconds != nil {
		wait = *in.WaitTimeSeconds
	}
	if wait < 0 || wait > MaxWaitSeconds {
		return nil, invalid("Value %d for parameter WaitTimeSeconds is invalid. Reason: Must be >= 0 and <= 20, if provided.", wait)
	}
	waitFor := min(time.Duration(wait)*time.Second, f.maxWait)
	var deadline <-chan time.Time
	if waitFor > 0 {
		t := time.NewTimer(waitFor)
		defer t.Stop()
		deadline = t.C
	}
	for {
		f.mu.Lock()
		q, aerr := f.lookup(in.QueueUrl)
		if aerr != nil {
			f.mu.Unlock()
			return nil, aerr
		}
		msgs := f.take(q, maxN, in)
		sent := f.sent
		f.mu.Unlock()
		if len(msgs) > 0 {
			return map[string][]wireMessage{"Messages": msgs}, nil
		}
		if deadline == nil {
			return struct{}{}, nil // SQS leaves Messages out when there are none
		}
		select {
		case <-sent:
		case <-deadline:
			deadline = nil // one last look
		case <-r.Context().Done():
			return struct{}{}, nil
		}
	}
}

// take receives up to n visible messages of q (f.mu held).
func (f *Fake) take(q *queue, n int, in *receiveIn) []wireMessage {
	now := f.now()
	vis := q.visibility
	if in.VisibilityTimeout != nil {
		vis = *in.VisibilityTimeout
	}
	sysNames := append(slices.Clone(in.AttributeNames), in.MessageSystemAttributeNames...)
	var out []wireMessage
	for _, m := range q.messages {
		if len(out) == n {
			break
		}
		if m.deleted || now.Before(m.visibleAt) {
			continue
		}
		m.receiveCount++
		if m.firstReceive.IsZero() {
			m.firstReceive = now
		}
		m.visibleAt = now.Add(time.Duration(vis) * time.Second)
		m.receipt = uuid.NewString() + "#" + m.id
		q.handles[m.receipt] = m
		wm := wireMessage{MessageId: m.id, ReceiptHandle: m.receipt, Body: m.body, MD5OfBody: md5Hex([]byte(m.body))}
		for _, name := range systemAttributes {
			if !slices.Contains(sysNames, "All") && !slices.Contains(sysNames, name) {
				continue
			}
			if wm.Attributes == nil {
				wm.Attributes = map[string]string{}
			}
			switch name {
			case "ApproximateFirstReceiveTimestamp":
				wm.Attributes[name] = strconv.FormatInt(m.firstReceive.UnixMilli(), 10)
			case "ApproximateReceiveCount":
				wm.Attributes[name] = strconv.Itoa(m.receiveCount)
			case "SenderId":
				wm.Attributes[name] = "AIDAFAKESQSSENDER0000"
			case "SentTimestamp":
				wm.Attributes[name] = strconv.FormatInt(m.sent.UnixMilli(), 10)
			}
		}
		picked := map[string]Attribute{}
		for name, a := range m.attrs {
			if !wanted(name, in.MessageAttributeNames) {
				continue
			}
			picked[name] = a
			if wm.MessageAttributes == nil {
				wm.MessageAttributes = map[string]wireAttribute{}
			}
			wa := wireAttribute{DataType: a.DataType, BinaryValue: a.BinaryValue}
			if a.BinaryValue == nil {
				wa.StringValue = &a.StringValue
			}
			wm.MessageAttributes[name] = wa
		}
		if len(picked) > 0 {
			wm.MD5OfMessageAttributes = attributesMD5(picked)
		}
		out = append(out, wm)
	}
	return out
}

// wanted reports whether message attribute name is asked for: "All" or ".*" asks for
// every one, "prefix.*" for those with the prefix, anything else names one.
func wanted(name string, asked []string) bool {
	for _, a := range asked {
		switch {
		case a == "All" || a == ".*" || a == name:
			return true
		case strings.HasSuffix(a, ".*") && strings.HasPrefix(name, strings.TrimSuffix(a, ".*")):
			return true
		}
	}
	return false
}

type handleIn struct {
	QueueUrl          *string
	ReceiptHandle     *string
	VisibilityTimeout *int
}

// handle finds the message a receipt handle names and whether the handle is its latest
// (f.mu held).
func (f *Fake) handle(in *handleIn) (*message, bool, *apiError) {
	q, aerr := f.lookup(in.QueueUrl)
	if aerr != nil {
		return nil, false, aerr
	}
	if in.ReceiptHandle == nil || *in.ReceiptHandle == "" {
		return nil, false, missing("ReceiptHandle")
	}
	m := q.handles[*in.ReceiptHandle]
	if m == nil {
		return nil, false, &apiError{code: "ReceiptHandleIsInvalid", msg: fmt.Sprintf("The input receipt handle \"%s\" is not a valid receipt handle.", *in.ReceiptHandle)}
	}
	return m, m.receipt == *in.ReceiptHandle, nil
}

func (f *Fake) deleteMessage(in *handleIn) (any, *apiError) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, latest, aerr := f.handle(in)
	if aerr != nil {
		return nil, aerr
	}
	if latest {
		m.deleted = true
	}
	return struct{}{}, nil
}

func (f *Fake) changeVisibility(in *handleIn) (any, *apiError) {
	if in.VisibilityTimeout == nil {
		return nil, missing("VisibilityTimeout")
	}
	if *in.VisibilityTimeout < 0 || *in.VisibilityTimeout > MaxVisibilityTimeout {
		return nil, invalid("Value %d for parameter VisibilityTimeout is invalid. Reason: Must be between 0 and 43200.", *in.VisibilityTimeout)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	m, latest, aerr := f.handle(in)
	if aerr != nil {
		return nil, aerr
	}
	now := f.now()
	if !latest || m.deleted || !now.Before(m.visibleAt) {
		return nil, &apiError{code: "MessageNotInflight", query: "AWS.SimpleQueueService.MessageNotInflight", msg: "The message referred to isn't in flight."}
	}
	m.visibleAt = now.Add(time.Duration(*in.VisibilityTimeout) * time.Second)
	return struct{}{}, nil
}

func md5Hex(b []byte) string {
	sum := md5.Sum(b)
	return hex.EncodeToString(sum[:])
}

// attributesMD5 is SQS's MD5OfMessageAttributes: over the attributes sorted by name, each
// as its name, its data type (each a 4-byte big-endian length and the UTF-8 bytes), a
// transport byte (1 for String and Number, 2 for Binary) and its value (length and bytes).
func attributesMD5(attrs map[string]Attribute) string {
	names := make([]string, 0, len(attrs))
	for n := range attrs {
		names = append(names, n)
	}
	slices.Sort(names)
	var buf bytes.Buffer
	field := func(b []byte) {
		_ = binary.Write(&buf, binary.BigEndian, uint32(len(b)))
		buf.Write(b)
	}
	for _, n := range names {
		a := attrs[n]
		field([]byte(n))
		field([]byte(a.DataType))
		if strings.HasPrefix(a.DataType, "Binary") {
			buf.WriteByte(2)
			field(a.BinaryValue)
		} else {
			buf.WriteByte(1)
			field([]byte(a.StringValue))
		}
	}
	return md5Hex(buf.Bytes())
}
