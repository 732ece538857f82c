// Package expiry is the retention consumer of the wake function (RD22-9): DynamoDB's TTL
// deletes a session's head once its expiry (store.Head.ExpiresAt, the table's ttl
// attribute) has passed, and the table's stream hands each such deletion to this handler,
// which deletes the rest of the session — its sub-workflow children, its timed park's
// schedule, its files, blobs and log items (session.Sessions.DeleteExpired).
//
// The stack's event source mapping already filters the stream to the TTL's head removals;
// Handle checks every record again and ignores the others: a REMOVE not made by the TTL
// (its userIdentity is not the service principal dynamodb.amazonaws.com — a DELETE through
// the API, a release's lease-only head), an item that is no head (events expire by TTL too),
// a head never committed. A record whose deletion fails is reported in the answer's
// batchItemFailures, so Lambda retries from it (the mapping's ReportBatchItemFailures) and,
// once its retries are spent, sends it to the function's on-failure queue.
package expiry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/store"
	ddbstore "github.com/archmax-ai/archmax/core/store/dynamodb"
)

// TTLPrincipal is the userIdentity DynamoDB gives the stream records of its TTL deletions
// (type "Service").
const TTLPrincipal = "dynamodb.amazonaws.com"

// Images decodes a stream record's old image into the head it was (*ddbstore.Store does).
type Images interface {
	HeadOfImage(ctx context.Context, sessionID string, image map[string]types.AttributeValue) (*store.Head, error)
}

// Handler deletes what is left of expired sessions. Safe for concurrent use.
type Handler struct {
	sessions *session.Sessions
	images   Images
	log      *slog.Logger
}

// New returns a Handler deleting through sessions (with its Scheduler, so a timed park's
// schedule goes too) and decoding images with images; log receives one record per session
// deleted or failed (nil discards), and sessions' audit line of each completed delete.
func New(sessions *session.Sessions, images Images, log *slog.Logger) *Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	sessions.WithAuditLog(log) // one "session deleted" line per completed delete (RD22-20)
	return &Handler{sessions: sessions, images: images, log: log}
}

// IsStreamEvent reports whether raw is a DynamoDB stream event (its Records come from
// aws:dynamodb), so the wake function can tell it from its other events.
func IsStreamEvent(raw json.RawMessage) bool {
	var probe struct {
		Records []struct {
			EventSource string `json:"eventSource"`
		} `json:"Records"`
	}
	return json.Unmarshal(raw, &probe) == nil && len(probe.Records) > 0 && probe.Records[0].EventSource == "aws:dynamodb"
}

// Handle deletes the session of every TTL head removal in ev and answers the records that
// failed (events.DynamoDBEventResponse's batchItemFailures, by sequence number; none when
// all succeeded). It never returns a Go error: a failure is a record to retry.
func (h *Handler) Handle(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	var out events.DynamoDBEventResponse
	for _, r := range ev.Records {
		id, head, err := h.expired(ctx, r)
		if err == nil && head != nil {
			var deleted bool
			if deleted, err = h.sessions.DeleteExpired(ctx, id, head.Body); err == nil {
				h.log.InfoContext(ctx, "expired session deleted", "sessionId", id, "deleted", deleted, "expiresAt", head.ExpiresAt)
			}
		}
		if err != nil {
			h.log.ErrorContext(ctx, "expired session not deleted", "sessionId", id, "sequenceNumber", r.Change.SequenceNumber, "error", err.Error())
			out.BatchItemFailures = append(out.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: r.Change.SequenceNumber})
		}
	}
	return out, nil
}

// expired returns the session and the head a record's TTL removed; a nil head (and no
// error) for a record that is no such removal.
func (h *Handler) expired(ctx context.Context, r events.DynamoDBEventRecord) (string, *store.Head, error) {
	if r.EventName != string(events.DynamoDBOperationTypeRemove) || r.UserIdentity == nil ||
		r.UserIdentity.Type != "Service" || r.UserIdentity.PrincipalID != TTLPrincipal {
		return "", nil, nil
	}
	pk, sk := r.Change.Keys["pk"], r.Change.Keys["sk"]
	if pk.DataType() != events.DataTypeString || sk.DataType() != events.DataTypeString {
		return "", nil, nil
	}
	id, ok := ddbstore.SessionOfKeys(pk.String(), sk.String())
	if !ok {
		return "", nil, nil
	}
	head, err := h.images.HeadOfImage(ctx, id, image(r.Change.OldImage))
	if errors.Is(err, ddbstore.ErrNotAHead) {
		return id, nil, nil
	}
	if errors.Is(err, store.ErrNotFound) {
		// its body's blob is gone: an earlier attempt deleted the session's blobs, and so its
		// children and files before them (session.Sessions.DeleteExpired's order); what is
		// left is the root's own, which needs no record
		return id, &store.Head{SessionID: id}, nil
	}
	if err != nil {
		return id, nil, fmt.Errorf("decode the removed head: %w", err)
	}
	return id, head, nil
}

// image converts a stream image's string and number attributes (all a head has) to the
// SDK's attribute values.
func image(in map[string]events.DynamoDBAttributeValue) map[string]types.AttributeValue {
	out := make(map[string]types.AttributeValue, len(in))
	for k, v := range in {
		switch v.DataType() {
		case events.DataTypeString:
			out[k] = &types.AttributeValueMemberS{Value: v.String()}
		case events.DataTypeNumber:
			out[k] = &types.AttributeValueMemberN{Value: v.Number()}
		}
	}
	return out
}
