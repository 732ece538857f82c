// Package dynamodb implements store.Log on one DynamoDB table (DESIGN.md §3, spec 02 §9.3,
// 15-Q1–Q3). Values over 64 KiB go to a store.Blobs (S3 in production) and the item keeps
// the reference, so no item ever approaches DynamoDB's 400 KB limit.
//
// # Table schema
//
// One table, key pk (S, HASH) + sk (S, RANGE), PAY_PER_REQUEST, TTL on ttl (CreateTable):
//
//	pk = S#<sessionId>  sk = HEAD    the session head:
//	    version      N  committed version; absent on a lease-only head (never committed,
//	                    invisible to Get and List)
//	    workflow, status, createdAt, updatedAt  S
//	    m, t, e      N  message, trail and event counters (items 0..n-1 are visible)
//	    body         S  the engine's JSON record, or
//	    bodyBlob     S  the blob ref of a body over 64 KiB (or not UTF-8)
//	    leaseOwner   S, leaseExpires N (Unix ms)   the writer lease; absent when released
//	    epoch        N  the lease's fencing token: 1, 2, 3, … counted per session by takeovers
//	    ttl          N  Unix s: on a released lease-only head (LeaseOnlyTTL); on a committed
//	                    head with a retention expiry, = expiresAt (DynamoDB's TTL deletes the
//	                    session's head then, RD22-8); NeverExpires while a lease-only head is
//	                    held, or on a committed head without one after a takeover
//	    expiresAt    N  Unix s: Head.ExpiresAt, only when set; a takeover restores ttl from it
//	    parkDue      S  ISO-8601 resumeAt, and parkKey S = "PARKED": only while ParkDue != "";
//	                    else, while the status is awaiting_decision, parkKey = "DECISION" and
//	                    parkDue = listSort (the decision queue, in the same index)
//	    listKey      S  = "S#<n>", n = FNV-1a(sessionId) mod ListShards, and
//	    listSort     S  = "<updatedAt>#<sessionId>": on committed heads
//	    owner        S  the owner's principal key (Head.Owner, write-once), and
//	    ownerKey     S  = "<n>#<owner>" (n as in listKey): only on heads with an owner
//	pk = S#<sessionId>  sk = M#<seq:10>#<epoch:19>   transcript message seq
//	                    sk = T#<seq:10>#<epoch:19>   trail step seq
//	                    sk = E#<seq:10>#<epoch:19>   event seq, with ttl N (Unix s; EventTTL)
//	    v    S  the item's JSON, or
//	    blob S  its blob ref when over 64 KiB (or not UTF-8)
//	pk = S#<sessionId>  sk = K#<key>  an idempotency record tied to the session (TieIdempotent),
//	                    ttl N (the record's): Delete removes the record I#<key> with it
//	pk = I#<key>        sk = I       an idempotency record: v B (the value), or blob S: its
//	                                 blob ref when over 64 KiB (blob namespace IdempotencyBlobs),
//	                                 ttl N (Unix s)
//	pk = U#<workflow>#<day>  sk = U  a workflow's usage in one UTC day (AddUsage, usage.go):
//	                                 tokens N, microUsd N, ttl N (the day's end + store.UsageTTL)
//
//	GSI byParkDue: parkKey HASH, parkDue RANGE, projection ALL   (ListDueParks; List of awaiting_decision)
//	GSI byUpdated: listKey HASH, listSort RANGE, projection ALL  (List)
//	GSI byOwner:   ownerKey HASH, listSort RANGE, projection ALL (List with an Owner)
//
// # Protocol (one writer per session)
//
// Acquire takes an absent or expired lease (the caller's own expired lease included) with
// one conditional UpdateItem that sets the lease and increments the epoch (SET epoch =
// if_not_exists(epoch, 0) + 1); renewing the caller's live lease (the engine does so every
// TTL/3 while a turn runs) only moves leaseExpires and keeps the epoch, so the owner's
// commit in flight stays valid. Another owner's live lease is store.ErrLeaseHeld.
//
// Commit reads the head with a consistent GetItem (version, counters, lease, epoch), checks
// them (store.ErrConflict) and c.Validate (store.ErrInvalidCommit), writes the new log items
// with BatchWriteItem (25 per request, unprocessed items retried with backoff), then makes
// them visible with ONE UpdateItem of the head conditional on the version, the caller's
// live lease and the epoch it read; a failed condition is store.ErrConflict, unless the old
// head DynamoDB returns with the failure (ReturnValuesOnConditionCheckFailure ALL_OLD) is
// this very update already applied — an SDK retry whose first attempt succeeded but whose
// response was lost — which is success. So a commit whose items fit one batch costs exactly
// two write requests (BatchWriteItem + UpdateItem; one when it has no items) plus one read,
// and the bytes it writes do not grow with the session. No transactions are used.
//
// Item keys carry the epoch of the lease they were written under, so a writer whose lease
// expired mid-commit can never overwrite an item another writer made visible: for each
// seq the item with the highest epoch wins. That holds because every takeover stores a
// higher epoch than any before it (a counter, independent of clocks) and a writer writes
// only past the counters it read. A lease-only head is kept for LeaseOnlyTTL after its
// Release so its epoch is not restarted under a writer still in flight. Concurrent commits of
// one owner within one Store are serialised in process; one owner must not be shared by
// two processes. Clock skew between writers affects only when a lease counts as expired.
//
// Reads of the head and items are strongly consistent; List and ListDueParks query GSIs
// and are eventually consistent on AWS. List queries the ListShards partitions of byUpdated
// (so the commits of many sessions do not all rewrite one index partition) and merges them
// in store.PageHeads' order — or, with an Owner, the owner's ListShards partitions of
// byOwner (one principal running many sessions at once spreads its index writes too), or,
// for the status awaiting_decision alone, the decision queue's partition of byParkDue
// (written only when a session parks for a decision, is answered, or replies while parked);
// workflow and status filters then apply within those rows only; a head whose body cannot be read (its blob gone with a session
// being deleted, or a malformed item) is left out of a listing rather than failing it. Items
// past the counters (from abandoned commits) are never returned and are overwritten or
// shadowed by the next writer; events expire after EventTTL, after which Events returns only
// the ones still stored.
package dynamodb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/archmax-ai/archmax/core/store"
)

// API is the subset of *dynamodb.Client the store uses (a test can wrap it).
type API interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
}

var _ API = (*dynamodb.Client)(nil)

// DefaultEventTTL is how long event items are kept when Store.EventTTL is 0.
const DefaultEventTTL = 30 * 24 * time.Hour

// NeverExpires is the ttl of a head DynamoDB's TTL must not delete while it has one: a
// lease-only head whose lease is held, a committed head without a retention expiry after a
// takeover (Unix s, 9999-12-31).
const NeverExpires = 253402300799

// LeaseOnlyTTL is how long the head of a session released before its first commit is kept
// (invisible to reads) before DynamoDB's TTL deletes it.
const LeaseOnlyTTL = 24 * time.Hour

// InlineLimit is the largest value (bytes) stored inside an item; larger values go to Blobs.
const InlineLimit = 64 << 10

// IdempotencyBlobs is the blob namespace (the store.Blobs session id) of idempotency values
// over InlineLimit: "~idempotency", which no session id can be ('~' only follows a parent
// session's id), so no session's blobs, nor their deletion, meet them.
const IdempotencyBlobs = "~idempotency"

// ErrNoBlobs: a value over InlineLimit (or not UTF-8) met a Store made without a
// store.Blobs — New(client, table, nil) — which can neither offload nor read it back.
var ErrNoBlobs = errors.New("dynamodb store: the value needs a blob store and this Store has none")

// Store is a store.Log on one DynamoDB table (schema in the package doc). Safe for
// concurrent use.
type Store struct {
	// EventTTL is how long event items live (DynamoDB TTL); 0 means DefaultEventTTL.
	// Set it before first use.
	EventTTL time.Duration
	// Clock is the time of leases, idempotency expiry and TTLs; nil means time.Now. Set it
	// before first use (tests).
	Clock func() time.Time

	client API
	table  string
	blobs  store.Blobs
	// commitLocks serialises Commit per session (striped by session id) within this Store.
	commitLocks [commitStripes]sync.Mutex
}

var _ store.Log = (*Store)(nil)

// New returns a Store on table (created by CreateTable) through client, offloading large
// values to blobs. blobs may be nil: a value that would need it then fails with ErrNoBlobs
// (writing it, or reading an item an earlier Store offloaded), never a panic.
func New(client API, table string, blobs store.Blobs) *Store {
	if blobs == nil {
		blobs = noBlobs{}
	}
	return &Store{client: client, table: table, blobs: blobs}
}

func (s *Store) now() time.Time {
	if s.Clock != nil {
		return s.Clock()
	}
	return time.Now()
}

// noBlobs is the Blobs of a Store made without one: nothing can be offloaded or read back,
// and a session has no blobs to delete.
type noBlobs struct{}

func (noBlobs) Put(_ context.Context, sessionID string, data []byte) (string, error) {
	return "", fmt.Errorf("%w (session %s: %d bytes over the %d-byte inline limit, or not UTF-8)", ErrNoBlobs, sessionID, len(data), InlineLimit)
}

func (noBlobs) Get(_ context.Context, sessionID, ref string) ([]byte, error) {
	return nil, fmt.Errorf("%w (session %s: the item refers to blob %s)", ErrNoBlobs, sessionID, ref)
}

func (noBlobs) DeleteSession(context.Context, string) error { return nil }

// commitStripes is the number of commit locks sessions are striped over.
const commitStripes = 64

// Attribute names and constant values of the schema.
const (
	attrPK           = "pk"
	attrSK           = "sk"
	attrVersion      = "version"
	attrWorkflow     = "workflow"
	attrStatus       = "status"
	attrCreatedAt    = "createdAt"
	attrUpdatedAt    = "updatedAt"
	attrMessages     = "m"
	attrTrail        = "t"
	attrEvents       = "e"
	attrBody         = "body"
	attrBodyBlob     = "bodyBlob"
	attrLeaseOwner   = "leaseOwner"
	attrLeaseExpires = "leaseExpires"
	attrEpoch        = "epoch"
	attrParkDue      = "parkDue"
	attrParkKey      = "parkKey"
	attrListKey      = "listKey"
	attrListSort     = "listSort"
	attrOwner        = "owner"
	attrOwnerKey     = "ownerKey"
	attrValue        = "v"
	attrBlob         = "blob"
	attrTTL          = "ttl"
	attrExpiresAt    = "expiresAt"

	skHead        = "HEAD"
	skIdem        = "I"
	parkedValue   = "PARKED"
	decisionValue = "DECISION" // parkKey of the decision queue

	indexByParkDue = "byParkDue"
	indexByUpdated = "byUpdated"
	indexByOwner   = "byOwner"

	seqDigits   = 10
	epochDigits = 19
	batchSize   = 25 // BatchWriteItem's request limit
)

func sessionPK(id string) string { return "S#" + id }

func headKey(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrPK: str(sessionPK(id)), attrSK: str(skHead)}
}

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

// expr collects the placeholder names and values of one request's expressions; only the
// ones used are sent (DynamoDB rejects unused ones).
type expr struct {
	names  map[string]string
	values map[string]types.AttributeValue
}

func newExpr() *expr {
	return &expr{names: map[string]string{}, values: map[string]types.AttributeValue{}}
}

// n returns the placeholder of attribute name (every name is aliased: several are reserved words).
func (x *expr) n(name string) string {
	x.names["#"+name] = name
	return "#" + name
}

// v binds av to the placeholder :key.
func (x *expr) v(key string, av types.AttributeValue) string {
	x.values[":"+key] = av
	return ":" + key
}

func isConditionFailed(err error) (*types.ConditionalCheckFailedException, bool) {
	var ccf *types.ConditionalCheckFailedException
	return ccf, errors.As(err, &ccf)
}

func nowMillis(t time.Time) int64 { return t.UnixMilli() }

// Acquire implements store.Log (15-Q1). Taking an absent or expired lease (the caller's
// own expired lease included) is one conditional UpdateItem that sets the lease and
// increments the session's epoch; renewing the caller's LIVE lease only moves leaseExpires
// to now+ttl and keeps the epoch, so the owner's commits in flight stay valid. The takeover
// is tried first (the usual call, at the start of a turn); when its condition fails, the
// old head it returns tells a renewal (a second request) from store.ErrLeaseHeld (another
// owner's live lease). A session never committed yields a zero head (Version 0, nil Body).
func (s *Store) Acquire(ctx context.Context, sessionID, owner string, ttl time.Duration) (*store.Head, error) {
	switch {
	case sessionID == "":
		return nil, errors.New("acquire: empty session id")
	case owner == "":
		return nil, fmt.Errorf("acquire %s: empty owner", sessionID)
	case ttl <= 0:
		return nil, fmt.Errorf("acquire %s: non-positive lease ttl %v", sessionID, ttl)
	}
	renew := false
	// The lease may change between two requests (expire, be released or taken); each failed
	// condition re-examines it, a bounded number of times.
	for range acquireAttempts {
		now := s.now()
		in := s.leaseUpdate(sessionID, owner, now, ttl, renew)
		out, err := s.client.UpdateItem(ctx, in)
		if ccf, ok := isConditionFailed(err); ok {
			old, err := s.failedItem(ctx, ccf, in.Key)
			if err != nil {
				return nil, fmt.Errorf("acquire %s: %w", sessionID, err)
			}
			var hi headItem
			if err := hi.unmarshal(old); err != nil {
				return nil, fmt.Errorf("acquire %s: %w", sessionID, err)
			}
			live := hi.LeaseOwner != "" && hi.LeaseExpires > nowMillis(now)
			if live && hi.LeaseOwner != owner {
				return nil, fmt.Errorf("acquire %s: %w", sessionID, store.ErrLeaseHeld)
			}
			renew = live
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("acquire %s: %w", sessionID, err)
		}
		h, err := s.decodeHead(ctx, sessionID, out.Attributes, now)
		if err != nil {
			return nil, fmt.Errorf("acquire %s: %w", sessionID, err)
		}
		return h, nil
	}
	return nil, fmt.Errorf("acquire %s: %w (the lease changed on every attempt)", sessionID, store.ErrLeaseHeld)
}

// acquireAttempts bounds Acquire's requests when the lease changes under it.
const acquireAttempts = 3

// leaseUpdate builds Acquire's conditional UpdateItem: the renewal of owner's live lease,
// or the takeover of an absent or expired one, which increments the epoch (starting at 1)
// and removes the expiry of a released lease-only head.
func (s *Store) leaseUpdate(sessionID, owner string, now time.Time, ttl time.Duration, renew bool) *dynamodb.UpdateItemInput {
	x := newExpr()
	lo, le := x.n(attrLeaseOwner), x.n(attrLeaseExpires)
	exp, at := x.v("exp", num(nowMillis(now.Add(ttl)))), x.v("now", num(nowMillis(now)))
	var update, cond string
	if renew {
		update = fmt.Sprintf("SET %s = %s", le, exp)
		cond = fmt.Sprintf("%s = %s AND %s > %s", lo, x.v("owner", str(owner)), le, at)
	} else {
		// the expiry a released lease-only head had is lifted (NeverExpires) while the lease is
		// held; a committed head keeps its retention expiry (expiresAt) across the takeover
		ep, ttl := x.n(attrEpoch), x.n(attrTTL)
		update = fmt.Sprintf("SET %s = %s, %s = %s, %s = if_not_exists(%s, %s) + %s, %s = if_not_exists(%s, %s)", lo, x.v("owner", str(owner)),
			le, exp, ep, ep, x.v("zero", num(0)), x.v("one", num(1)), ttl, x.n(attrExpiresAt), x.v("never", num(NeverExpires)))
		cond = fmt.Sprintf("attribute_not_exists(%s) OR %s <= %s", lo, le, at)
	}
	return &dynamodb.UpdateItemInput{
		TableName:                           &s.table,
		Key:                                 headKey(sessionID),
		UpdateExpression:                    &update,
		ConditionExpression:                 &cond,
		ExpressionAttributeNames:            x.names,
		ExpressionAttributeValues:           x.values,
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
}

// failedItem returns the item a failed condition was checked against: the one DynamoDB
// returned with the error (ReturnValuesOnConditionCheckFailure ALL_OLD), or, from an engine
// that returns none, a consistent GetItem of key. Nil when no item exists.
func (s *Store) failedItem(ctx context.Context, ccf *types.ConditionalCheckFailedException, key map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
	if ccf.Item != nil {
		return ccf.Item, nil
	}
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, err
	}
	return out.Item, nil
}

// Release implements store.Log: it removes owner's lease (a no-op when owner does not hold
// it). The head of a session never committed is kept, invisible, for LeaseOnlyTTL (its ttl
// attribute; the next takeover removes it) so that its epoch keeps counting past any writer
// still in flight: deleting it at once would restart the epoch at 1.
func (s *Store) Release(ctx context.Context, sessionID, owner string) error {
	x := newExpr()
	lo := x.n(attrLeaseOwner)
	update := fmt.Sprintf("REMOVE %s, %s", lo, x.n(attrLeaseExpires))
	cond := fmt.Sprintf("%s = %s", lo, x.v("owner", str(owner)))
	out, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 &s.table,
		Key:                       headKey(sessionID),
		UpdateExpression:          &update,
		ConditionExpression:       &cond,
		ExpressionAttributeNames:  x.names,
		ExpressionAttributeValues: x.values,
		ReturnValues:              types.ReturnValueAllNew,
	})
	if _, ok := isConditionFailed(err); ok {
		return nil
	}
	if err != nil {
		return fmt.Errorf("release %s: %w", sessionID, err)
	}
	if _, committed := out.Attributes[attrVersion]; committed {
		return nil
	}
	// A lease-only head: let it expire unless someone acquired or committed meanwhile.
	x = newExpr()
	update = fmt.Sprintf("SET %s = %s", x.n(attrTTL), x.v("ttl", num(s.now().Add(LeaseOnlyTTL).Unix())))
	cond = fmt.Sprintf("attribute_not_exists(%s) AND attribute_not_exists(%s)", x.n(attrLeaseOwner), x.n(attrVersion))
	_, err = s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 &s.table,
		Key:                       headKey(sessionID),
		UpdateExpression:          &update,
		ConditionExpression:       &cond,
		ExpressionAttributeNames:  x.names,
		ExpressionAttributeValues: x.values,
	})
	if _, ok := isConditionFailed(err); ok || err == nil {
		return nil
	}
	return fmt.Errorf("release %s: %w", sessionID, err)
}

// writerState is what Commit reads of the head before writing.
type writerState struct {
	version, epoch int64
	old            store.Head // counters and owner only
	lease          store.Lease
}

// Commit implements store.Log (02 §9.3, 15-Q1/Q2): see the package doc for the protocol.
// store.ErrConflict when owner holds no live lease or the version is not
// c.ExpectedVersion; an error wrapping store.ErrInvalidCommit when the counters do not
// match the items (nothing is written then).
func (s *Store) Commit(ctx context.Context, sessionID, owner string, c *store.Commit) (*store.Head, error) {
	mu := &s.commitLocks[stripe(sessionID)]
	mu.Lock()
	defer mu.Unlock()

	now := s.now()
	w, err := s.writerState(ctx, sessionID)
	if err != nil {
		return nil, fmt.Errorf("commit %s: %w", sessionID, err)
	}
	switch {
	case w == nil || w.lease.Owner != owner || !w.lease.Live(now):
		return nil, fmt.Errorf("commit %s: %w (lease not held by %s)", sessionID, store.ErrConflict, owner)
	case w.version != c.ExpectedVersion:
		return nil, fmt.Errorf("commit %s: %w (version %d, expected %d)", sessionID, store.ErrConflict, w.version, c.ExpectedVersion)
	}
	if err := c.Validate(&w.old); err != nil {
		return nil, fmt.Errorf("commit %s: %w", sessionID, err)
	}

	puts, err := s.logItems(ctx, sessionID, w, c, now)
	if err != nil {
		return nil, fmt.Errorf("commit %s: %w", sessionID, err)
	}
	if err := s.batchWrite(ctx, puts); err != nil {
		return nil, fmt.Errorf("commit %s: write items: %w", sessionID, err)
	}
	in, err := s.headUpdate(ctx, sessionID, owner, w, c, now)
	if err != nil {
		return nil, fmt.Errorf("commit %s: %w", sessionID, err)
	}
	if _, err := s.client.UpdateItem(ctx, in); err != nil {
		ccf, ok := isConditionFailed(err)
		if !ok {
			return nil, fmt.Errorf("commit %s: update head: %w", sessionID, err)
		}
		old, err := s.failedItem(ctx, ccf, in.Key)
		if err != nil {
			return nil, fmt.Errorf("commit %s: update head: %w", sessionID, err)
		}
		if !alreadyApplied(old, owner, w.epoch, c) {
			return nil, fmt.Errorf("commit %s: %w (lease or version changed)", sessionID, store.ErrConflict)
		}
	}
	h := c.Head
	h.SessionID = sessionID
	h.Version = c.ExpectedVersion + 1
	h.Body = clone(c.Head.Body)
	h.Lease = &store.Lease{Owner: w.lease.Owner, ExpiresAt: w.lease.ExpiresAt}
	return &h, nil
}

// alreadyApplied reports whether the head old, on which the head update's condition
// failed, is that update's own result: the SDK retried an update that was applied but
// whose response was lost. It is when old has c's version, counters and owner, and the
// epoch the commit wrote its items under.
func alreadyApplied(old map[string]types.AttributeValue, owner string, epoch int64, c *store.Commit) bool {
	var hi headItem
	if old == nil || hi.unmarshal(old) != nil {
		return false
	}
	return hi.Version == c.ExpectedVersion+1 && hi.LeaseOwner == owner && hi.Epoch == epoch &&
		hi.Messages == c.Head.Messages && hi.Trail == c.Head.Trail && hi.Events == c.Head.Events
}

// hash32 is the FNV-1a hash of a session id: its commit-lock stripe and listing shard.
func hash32(sessionID string) uint32 {
	f := fnv.New32a()
	f.Write([]byte(sessionID))
	return f.Sum32()
}

func stripe(sessionID string) int { return int(hash32(sessionID) % commitStripes) }

// writerState reads the fields Commit checks with a consistent GetItem; nil when no head exists.
func (s *Store) writerState(ctx context.Context, sessionID string) (*writerState, error) {
	x := newExpr()
	proj := fmt.Sprintf("%s, %s, %s, %s, %s, %s, %s, %s", x.n(attrVersion), x.n(attrMessages), x.n(attrTrail),
		x.n(attrEvents), x.n(attrLeaseOwner), x.n(attrLeaseExpires), x.n(attrEpoch), x.n(attrOwner))
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:                &s.table,
		Key:                      headKey(sessionID),
		ConsistentRead:           aws.Bool(true),
		ProjectionExpression:     &proj,
		ExpressionAttributeNames: x.names,
	})
	if err != nil || out.Item == nil {
		return nil, err
	}
	var hi headItem
	if err := hi.unmarshal(out.Item); err != nil {
		return nil, err
	}
	w := &writerState{
		version: hi.Version,
		epoch:   hi.Epoch,
		old:     store.Head{Messages: hi.Messages, Trail: hi.Trail, Events: hi.Events, Owner: hi.Owner},
	}
	if hi.LeaseOwner != "" {
		w.lease = store.Lease{Owner: hi.LeaseOwner, ExpiresAt: time.UnixMilli(hi.LeaseExpires)}
	}
	return w, nil
}

// logItems builds the put requests of c's items, numbered from the stored counters and
// keyed with the lease epoch; large values are offloaded to blobs.
func (s *Store) logItems(ctx context.Context, sessionID string, w *writerState, c *store.Commit, now time.Time) ([]types.WriteRequest, error) {
	eventTTL := s.EventTTL
	if eventTTL == 0 {
		eventTTL = DefaultEventTTL
	}
	pk := str(sessionPK(sessionID))
	var puts []types.WriteRequest
	for _, l := range logs {
		for i, raw := range l.items(c) {
			item := map[string]types.AttributeValue{
				attrPK: pk,
				attrSK: str(itemSK(l.prefix, l.counter(&w.old)+int64(i), w.epoch)),
			}
			name, av, err := s.value(ctx, sessionID, raw, attrValue, attrBlob)
			if err != nil {
				return nil, err
			}
			item[name] = av
			if l.prefix == "E" {
				item[attrTTL] = num(now.Add(eventTTL).Unix())
			}
			puts = append(puts, types.WriteRequest{PutRequest: &types.PutRequest{Item: item}})
		}
	}
	return puts, nil
}

// value returns the attribute holding data: inline under inline as a string, or, when data
// is over InlineLimit or not valid UTF-8, its blob ref under ref.
func (s *Store) value(ctx context.Context, sessionID string, data []byte, inline, ref string) (string, types.AttributeValue, error) {
	if len(data) <= InlineLimit && utf8.Valid(data) {
		return inline, str(string(data)), nil
	}
	r, err := s.blobs.Put(ctx, sessionID, data)
	if err != nil {
		return "", nil, fmt.Errorf("offload %d bytes: %w", len(data), err)
	}
	return ref, str(r), nil
}

// headUpdate builds the conditional UpdateItem that stores c.Head as version
// ExpectedVersion+1, making the new items visible.
func (s *Store) headUpdate(ctx context.Context, sessionID, owner string, w *writerState, c *store.Commit, now time.Time) (*dynamodb.UpdateItemInput, error) {
	h := &c.Head
	x := newExpr()
	set := []string{
		x.n(attrVersion) + " = " + x.v("version", num(c.ExpectedVersion+1)),
		x.n(attrWorkflow) + " = " + x.v("workflow", str(h.Workflow)),
		x.n(attrStatus) + " = " + x.v("status", str(h.Status)),
		x.n(attrCreatedAt) + " = " + x.v("createdAt", str(h.CreatedAt)),
		x.n(attrUpdatedAt) + " = " + x.v("updatedAt", str(h.UpdatedAt)),
		x.n(attrMessages) + " = " + x.v("m", num(h.Messages)),
		x.n(attrTrail) + " = " + x.v("t", num(h.Trail)),
		x.n(attrEvents) + " = " + x.v("e", num(h.Events)),
		x.n(attrListKey) + " = " + x.v("listKey", str(listShardKey(listShard(sessionID)))),
		x.n(attrListSort) + " = " + x.v("listSort", str(listSort(h.UpdatedAt, sessionID))),
	}
	var remove []string
	if len(h.Body) > 0 {
		name, av, err := s.value(ctx, sessionID, h.Body, attrBody, attrBodyBlob)
		if err != nil {
			return nil, err
		}
		set = append(set, x.n(name)+" = "+x.v("body", av))
		if name == attrBody {
			remove = append(remove, x.n(attrBodyBlob))
		} else {
			remove = append(remove, x.n(attrBody))
		}
	} else {
		remove = append(remove, x.n(attrBody), x.n(attrBodyBlob))
	}
	switch {
	case h.ParkDue != "":
		set = append(set, x.n(attrParkDue)+" = "+x.v("parkDue", str(h.ParkDue)),
			x.n(attrParkKey)+" = "+x.v("parkKey", str(parkedValue)))
	case h.Status == StatusAwaitingDecision:
		set = append(set, x.n(attrParkDue)+" = "+x.v("parkDue", str(listSort(h.UpdatedAt, sessionID))),
			x.n(attrParkKey)+" = "+x.v("parkKey", str(decisionValue)))
	default:
		remove = append(remove, x.n(attrParkDue), x.n(attrParkKey))
	}
	if h.ExpiresAt > 0 { // the retention expiry, which DynamoDB's TTL acts on (RD22-8)
		set = append(set, x.n(attrExpiresAt)+" = "+x.v("expiresAt", num(h.ExpiresAt)), x.n(attrTTL)+" = "+x.v("ttl", num(h.ExpiresAt)))
	} else {
		remove = append(remove, x.n(attrExpiresAt), x.n(attrTTL))
	}
	if h.Owner != "" { // write-once: Validate refused a change against the head read under the version condition
		set = append(set, x.n(attrOwner)+" = "+x.v("sessionOwner", str(h.Owner)),
			x.n(attrOwnerKey)+" = "+x.v("ownerKey", str(ownerShardKey(listShard(sessionID), h.Owner))))
	}
	update := "SET " + strings.Join(set, ", ") + " REMOVE " + strings.Join(remove, ", ")

	versionCond := "attribute_not_exists(" + x.n(attrVersion) + ")"
	if c.ExpectedVersion != 0 {
		versionCond = x.n(attrVersion) + " = " + x.v("expected", num(c.ExpectedVersion))
	}
	cond := fmt.Sprintf("%s AND %s = %s AND %s > %s AND %s = %s", versionCond,
		x.n(attrLeaseOwner), x.v("owner", str(owner)),
		x.n(attrLeaseExpires), x.v("now", num(nowMillis(now))),
		x.n(attrEpoch), x.v("epoch", num(w.epoch)))
	return &dynamodb.UpdateItemInput{
		TableName:                           &s.table,
		Key:                                 headKey(sessionID),
		UpdateExpression:                    &update,
		ConditionExpression:                 &cond,
		ExpressionAttributeNames:            x.names,
		ExpressionAttributeValues:           x.values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}, nil
}

// ListShards is the number of partitions of the byUpdated index: a committed head's
// listKey is "S#<n>", n = FNV-1a(sessionId) mod ListShards, so commits of many sessions
// spread their index writes instead of all rewriting one partition.
const ListShards = 16

func listShard(sessionID string) int { return int(hash32(sessionID) % ListShards) }

func listShardKey(shard int) string { return "S#" + strconv.Itoa(shard) }

func listSort(updatedAt, sessionID string) string { return updatedAt + "#" + sessionID }

// ownerShardKey is the byOwner partition of owner's heads in shard (the session's listShard).
func ownerShardKey(shard int, owner string) string { return strconv.Itoa(shard) + "#" + owner }

// StatusAwaitingDecision is the engine's status of a session parked for a person's
// decision (session.StatusAwaitingDecision): such heads form the decision queue.
const StatusAwaitingDecision = "awaiting_decision"

// batchWrite sends reqs with BatchWriteItem, batchSize at a time, retrying unprocessed
// items with exponential backoff (10 ms doubling, at most 8 attempts per batch).
func (s *Store) batchWrite(ctx context.Context, reqs []types.WriteRequest) error {
	for start := 0; start < len(reqs); start += batchSize {
		pending := map[string][]types.WriteRequest{s.table: reqs[start:min(start+batchSize, len(reqs))]}
		for attempt, backoff := 0, 10*time.Millisecond; len(pending[s.table]) > 0; attempt, backoff = attempt+1, 2*backoff {
			if attempt == 8 {
				return fmt.Errorf("%d items still unprocessed after %d attempts", len(pending[s.table]), attempt)
			}
			if attempt > 0 {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(backoff):
				}
			}
			out, err := s.client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: pending})
			if err != nil {
				return err
			}
			pending = out.UnprocessedItems
		}
	}
	return nil
}

// Get implements store.Log: the committed head (strongly consistent) with its live lease,
// or store.ErrNotFound.
func (s *Store) Get(ctx context.Context, sessionID string) (*store.Head, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      &s.table,
		Key:            headKey(sessionID),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", sessionID, err)
	}
	if _, committed := out.Item[attrVersion]; !committed {
		return nil, fmt.Errorf("session %s: %w", sessionID, store.ErrNotFound)
	}
	h, err := s.decodeHead(ctx, sessionID, out.Item, s.now())
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", sessionID, err)
	}
	return h, nil
}

// RememberIdempotent implements store.Log with one conditional PutItem (absent or expired
// key); on a failed condition the recorded value comes back with the error (or, on engines
// that do not return it, from a consistent GetItem). A value over InlineLimit is offloaded
// to blobs (IdempotencyBlobs) first and the item keeps its ref, so a value of any size is
// recorded (an HTTP answer over DynamoDB's 400 KB item limit included).
func (s *Store) RememberIdempotent(ctx context.Context, key string, value []byte, ttl time.Duration) ([]byte, bool, error) {
	now := s.now()
	k := map[string]types.AttributeValue{attrPK: str("I#" + key), attrSK: str(skIdem)}
	item, err := s.idemItem(ctx, k, value, now.Add(ttl))
	if err != nil {
		return nil, false, fmt.Errorf("remember %s: %w", key, err)
	}
	x := newExpr()
	cond := fmt.Sprintf("attribute_not_exists(%s) OR %s <= %s", x.n(attrPK), x.n(attrTTL), x.v("now", num(now.Unix())))
	_, err = s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           &s.table,
		Item:                                item,
		ConditionExpression:                 &cond,
		ExpressionAttributeNames:            x.names,
		ExpressionAttributeValues:           x.values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	ccf, failed := isConditionFailed(err)
	if !failed {
		if err != nil {
			return nil, false, fmt.Errorf("remember %s: %w", key, err)
		}
		return nil, false, nil
	}
	old, err := s.failedItem(ctx, ccf, k)
	if err != nil {
		return nil, false, fmt.Errorf("remember %s: %w", key, err)
	}
	v, err := s.idemValue(ctx, old)
	if err != nil {
		return nil, false, fmt.Errorf("remember %s: %w", key, err)
	}
	return v, true, nil
}

// PutIdempotent implements store.Log with one unconditional PutItem (a value over
// InlineLimit offloaded first, as for RememberIdempotent).
func (s *Store) PutIdempotent(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	k := map[string]types.AttributeValue{attrPK: str("I#" + key), attrSK: str(skIdem)}
	item, err := s.idemItem(ctx, k, value, s.now().Add(ttl))
	if err == nil {
		_, err = s.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.table, Item: item})
	}
	if err != nil {
		return fmt.Errorf("put idempotency record %s: %w", key, err)
	}
	return nil
}

// idemItem is the idempotency record item under key k expiring at expires (rounded up to
// whole seconds): the value inline as binary, or over InlineLimit its blob ref.
func (s *Store) idemItem(ctx context.Context, k map[string]types.AttributeValue, value []byte, expires time.Time) (map[string]types.AttributeValue, error) {
	item := map[string]types.AttributeValue{attrPK: k[attrPK], attrSK: k[attrSK], attrTTL: num(expires.Add(time.Second - 1).Unix())}
	if len(value) <= InlineLimit {
		// never a nil slice: the SDK would drop the attribute
		item[attrValue] = &types.AttributeValueMemberB{Value: append([]byte{}, value...)}
		return item, nil
	}
	ref, err := s.blobs.Put(ctx, IdempotencyBlobs, value)
	if err != nil {
		return nil, fmt.Errorf("offload %d bytes: %w", len(value), err)
	}
	item[attrBlob] = str(ref)
	return item, nil
}

// idemValue is the value of a recorded idempotency item: inline, or read from its blob.
func (s *Store) idemValue(ctx context.Context, item map[string]types.AttributeValue) ([]byte, error) {
	if b, ok := item[attrValue].(*types.AttributeValueMemberB); ok {
		return b.Value, nil
	}
	ref, ok := item[attrBlob].(*types.AttributeValueMemberS)
	if !ok {
		return nil, errors.New("recorded item has neither a binary value nor a blob ref")
	}
	v, err := s.blobs.Get(ctx, IdempotencyBlobs, ref.Value)
	if err != nil {
		return nil, fmt.Errorf("idempotency blob %s: %w", ref.Value, err)
	}
	return v, nil
}

// Delete implements store.Log: it queries every item of the session, deletes the log items
// (messages, trail, events) and the idempotency records tied to the session (TieIdempotent)
// with BatchWriteItem, then the session's blobs, and the head
// LAST with one DeleteItem (RD22-3): a delete stopped part-way leaves the head, so the
// session is still found and a repeated Delete finishes it. It reports whether a committed
// head existed. The lease does not guard it: the caller (session.Sessions.Delete) holds it.
func (s *Store) Delete(ctx context.Context, sessionID string) (bool, error) {
	x := newExpr()
	keyCond := x.n(attrPK) + " = " + x.v("pk", str(sessionPK(sessionID)))
	proj := fmt.Sprintf("%s, %s, %s", x.n(attrPK), x.n(attrSK), x.n(attrVersion))
	var (
		dels    []types.WriteRequest
		existed bool
		head    bool
	)
	err := s.query(ctx, &dynamodb.QueryInput{
		TableName:                 &s.table,
		KeyConditionExpression:    &keyCond,
		ProjectionExpression:      &proj,
		ExpressionAttributeNames:  x.names,
		ExpressionAttributeValues: x.values,
		ConsistentRead:            aws.Bool(true),
	}, func(item map[string]types.AttributeValue) error {
		if sk, ok := item[attrSK].(*types.AttributeValueMemberS); ok && sk.Value == skHead {
			_, existed = item[attrVersion]
			head = true
			return nil
		}
		key := map[string]types.AttributeValue{attrPK: item[attrPK], attrSK: item[attrSK]}
		dels = append(dels, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: key}})
		if sk, ok := item[attrSK].(*types.AttributeValueMemberS); ok && strings.HasPrefix(sk.Value, skTiedPrefix) {
			rec := map[string]types.AttributeValue{attrPK: str("I#" + sk.Value[len(skTiedPrefix):]), attrSK: str(skIdem)}
			// the record before its tie: a delete stopped between them finds the tie again
			dels = append(dels[:len(dels)-1], types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: rec}}, dels[len(dels)-1])
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("delete %s: %w", sessionID, err)
	}
	if err := s.batchWrite(ctx, dels); err != nil {
		return false, fmt.Errorf("delete %s: %w", sessionID, err)
	}
	if err := s.blobs.DeleteSession(ctx, sessionID); err != nil {
		return false, fmt.Errorf("delete %s: blobs: %w", sessionID, err)
	}
	if head {
		if _, err := s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &s.table, Key: headKey(sessionID)}); err != nil {
			return false, fmt.Errorf("delete %s: head: %w", sessionID, err)
		}
	}
	return existed, nil
}

var _ store.IdempotencyTier = (*Store)(nil)

// skTiedPrefix is the sort key prefix of a session's tied idempotency records: K#<key>.
const skTiedPrefix = "K#"

// TieIdempotent implements store.IdempotencyTier with one PutItem of K#<key> in the session's
// partition, expiring with the record (ttl); Delete reads it and removes the record I#<key>.
func (s *Store) TieIdempotent(ctx context.Context, sessionID, key string, ttl time.Duration) error {
	item := map[string]types.AttributeValue{attrPK: str(sessionPK(sessionID)), attrSK: str(skTiedPrefix + key),
		attrTTL: num(s.now().Add(ttl).Add(time.Second - 1).Unix())}
	if _, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.table, Item: item}); err != nil {
		return fmt.Errorf("tie idempotency record %s to %s: %w", key, sessionID, err)
	}
	return nil
}

// query runs in page by page (following LastEvaluatedKey) and calls each for every item
// until it returns errStop or an error.
func (s *Store) query(ctx context.Context, in *dynamodb.QueryInput, each func(map[string]types.AttributeValue) error) error {
	for {
		out, err := s.client.Query(ctx, in)
		if err != nil {
			return err
		}
		for _, item := range out.Items {
			if err := each(item); err != nil {
				if errors.Is(err, errStop) {
					return nil
				}
				return err
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// errStop ends a query early without error.
var errStop = errors.New("stop")

// clone copies b, keeping nil as nil.
func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}

// errMalformedHead: a head item whose attributes do not have the schema's types.
var errMalformedHead = errors.New("malformed head item")

// headItem is the decoded head item (absent attributes decode as zero values).
type headItem struct {
	Version                                int64
	Workflow, Status, CreatedAt, UpdatedAt string
	ParkDue, ParkKey, Owner                string
	Messages, Trail, Events                int64
	Body, BodyBlob                         string
	LeaseOwner                             string
	LeaseExpires, Epoch, ExpiresAt         int64
}

func (hi *headItem) unmarshal(item map[string]types.AttributeValue) error {
	for name, p := range map[string]*string{
		attrWorkflow: &hi.Workflow, attrStatus: &hi.Status, attrCreatedAt: &hi.CreatedAt,
		attrUpdatedAt: &hi.UpdatedAt, attrParkDue: &hi.ParkDue, attrBody: &hi.Body,
		attrBodyBlob: &hi.BodyBlob, attrLeaseOwner: &hi.LeaseOwner, attrParkKey: &hi.ParkKey, attrOwner: &hi.Owner,
	} {
		if v, ok := item[name]; ok {
			s, ok := v.(*types.AttributeValueMemberS)
			if !ok {
				return fmt.Errorf("%w: %s is not a string", errMalformedHead, name)
			}
			*p = s.Value
		}
	}
	for name, p := range map[string]*int64{
		attrVersion: &hi.Version, attrMessages: &hi.Messages, attrTrail: &hi.Trail, attrEvents: &hi.Events,
		attrLeaseExpires: &hi.LeaseExpires, attrEpoch: &hi.Epoch, attrExpiresAt: &hi.ExpiresAt,
	} {
		if v, ok := item[name]; ok {
			n, ok := v.(*types.AttributeValueMemberN)
			if !ok {
				return fmt.Errorf("%w: %s is not a number", errMalformedHead, name)
			}
			var err error
			if *p, err = strconv.ParseInt(n.Value, 10, 64); err != nil {
				return fmt.Errorf("%w: %s: %w", errMalformedHead, name, err)
			}
		}
	}
	return nil
}

// decodeHead turns a head item into a store.Head (Body fetched from blobs when offloaded),
// carrying the lease when it is live at now.
func (s *Store) decodeHead(ctx context.Context, sessionID string, item map[string]types.AttributeValue, now time.Time) (*store.Head, error) {
	var hi headItem
	if err := hi.unmarshal(item); err != nil {
		return nil, err
	}
	h := &store.Head{
		SessionID: sessionID,
		Version:   hi.Version,
		Workflow:  hi.Workflow,
		Status:    hi.Status,
		CreatedAt: hi.CreatedAt,
		UpdatedAt: hi.UpdatedAt,
		ParkDue:   hi.ParkDue,
		Owner:     hi.Owner,
		ExpiresAt: hi.ExpiresAt,
		Messages:  hi.Messages,
		Trail:     hi.Trail,
		Events:    hi.Events,
	}
	if hi.ParkKey == decisionValue {
		h.ParkDue = "" // the decision queue's sort key, not a due time
	}
	switch {
	case hi.BodyBlob != "":
		body, err := s.blobs.Get(ctx, sessionID, hi.BodyBlob)
		if err != nil {
			return nil, fmt.Errorf("body blob %s: %w", hi.BodyBlob, err)
		}
		h.Body = body
	case hi.Body != "":
		h.Body = json.RawMessage(hi.Body)
	}
	if l := (&store.Lease{Owner: hi.LeaseOwner, ExpiresAt: time.UnixMilli(hi.LeaseExpires)}); hi.LeaseOwner != "" && l.Live(now) {
		h.Lease = l
	}
	return h, nil
}
