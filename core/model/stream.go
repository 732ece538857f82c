package model

import "context"

// Delta is one piece of an assistant answer's text as the provider produced it.
type Delta struct {
	Text string
}

// StreamClient is a Client that can hand over an answer's text while the call runs.
type StreamClient interface {
	Client
	// ConverseStream is Converse with onDelta called with each piece of the answer's text,
	// in order, on the calling goroutine, before it returns. Concatenated, the pieces are
	// the text blocks of the returned message. A client configured not to stream may answer
	// like Converse and never call onDelta. A call that fails after pieces were handed over
	// returns its error like Converse: the pieces are then all there is of the answer.
	ConverseStream(ctx context.Context, req *Request, onDelta func(Delta)) (*Response, error)
}

// Stream makes one call on c, through ConverseStream when c is a StreamClient (onDelta
// receiving the text as it arrives), else through Converse (onDelta never called).
func Stream(ctx context.Context, c Client, req *Request, onDelta func(Delta)) (*Response, error) {
	if sc, ok := c.(StreamClient); ok && onDelta != nil {
		return sc.ConverseStream(ctx, req, onDelta)
	}
	return c.Converse(ctx, req)
}
