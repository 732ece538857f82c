package golden_test

import (
	"bytes"
	"net/http"
	"time"

	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/store"
)

// A scenario is one kind of stored session: make drives a fresh world to it (and returns
// the session id); each of resumes takes it on from a restored world of its own as a
// deployment would and checks where it ends.
type scenario struct {
	name    string
	make    func(w *world) string
	resumes map[string]func(w *world, sid string)
}

var scenarios = []scenario{
	{name: "parked-decision", make: (*world).parkedDecision, resumes: map[string]func(*world, string){"decide": func(w *world, sid string) {
		// the start's Idempotency-Key record still answers its repeat: no second session
		if a := w.boot(nil).serve(w.t, startReq("shop", "Please charge my card for the order.", "order-1")); a.status/100 != 2 || w.sessions() != 1 {
			w.t.Fatalf("repeated start: %d %v, %d sessions", a.status, a.body, w.sessions())
		}
		if a := w.boot(nil).serve(w.t, decisionReq(sid, "ship", "approve-1")); a.status/100 != 2 {
			w.t.Fatalf("decision: %d %v", a.status, a.body)
		}
		w.drive(sid)
		w.want(sid, session.StatusAwaitingInput)
		w.wakeUp(sid)
		w.want(sid, session.StatusCompleted)
		if n := w.toolResults(sid, "charge"); n != 3 {
			w.t.Fatalf("%d charge results, want 3 (one before the park, two after)", n)
		}
	}}},
	{name: "parked-input", make: (*world).parkedInput, resumes: map[string]func(*world, string){"wake": func(w *world, sid string) {
		before := w.head(sid).Version
		// the decision's repeat is answered from its record, and decides nothing again
		if a := w.boot(nil).serve(w.t, decisionReq(sid, "ship", "approve-1")); a.status/100 != 2 {
			w.t.Fatalf("repeated decision: %d %v", a.status, a.body)
		}
		if h := w.head(sid); h.Version != before || session.Status(h.Status) != session.StatusAwaitingInput {
			w.t.Fatalf("the repeated decision changed the session: version %d → %d, %s", before, h.Version, h.Status)
		}
		w.wakeUp(sid)
		w.want(sid, session.StatusCompleted)
		if n := w.toolResults(sid, "charge"); n != 3 {
			w.t.Fatalf("%d charge results, want 3", n)
		}
	},
		"deliver": func(w *world, sid string) {
			// the courier's delivery, before the timer: the park's delivery channel still opens
			if a := w.boot(nil).serve(w.t, deliveryReq(sid, "scan-1")); a.status/100 != 2 {
				w.t.Fatalf("delivery: %d %v", a.status, a.body)
			}
			w.drive(sid)
			w.want(sid, session.StatusCompleted)
		}}},
	{name: "completed", make: (*world).completed, resumes: map[string]func(*world, string){"read-and-turn": func(w *world, sid string) {
		pr := w.boot(nil)
		a := pr.serve(w.t, sessionGet(sid))
		if a.status != http.StatusOK || a.body["status"] != string(session.StatusCompleted) {
			w.t.Fatalf("GET session: %d %v", a.status, a.body)
		}
		a = pr.serve(w.t, messagesGet(sid))
		list, _ := a.body["messages"].([]any)
		if a.status != http.StatusOK || int64(len(list)) != w.head(sid).Messages {
			w.t.Fatalf("GET messages: %d, %d of %d messages", a.status, len(list), w.head(sid).Messages)
		}
		// a completed session takes a new turn and completes it
		if a := w.boot(nil).serve(w.t, turnReq("shop", sid, "Thanks. Is it done?", "again-1")); a.status/100 != 2 {
			w.t.Fatalf("new turn: %d %v", a.status, a.body)
		}
		w.drive(sid)
		w.want(sid, session.StatusCompleted)
		if last := w.messages(sid); last[len(last)-1]["text"] != "Done." {
			w.t.Fatalf("the new turn ended %v", last[len(last)-1])
		}
	}}},
	{name: "interrupted", make: (*world).interrupted, resumes: map[string]func(*world, string){"sweep": func(w *world, sid string) {
		w.want(sid, session.StatusRunning)
		w.drive(sid) // the sweep finds the stranded turn once the dead writer's lease lapsed
		w.want(sid, session.StatusAwaitingDecision)
		w.mu.Lock()
		charged := len(w.charges)
		w.mu.Unlock()
		// the charge the dead process made was committed: the turn goes on past it
		if n := w.toolResults(sid, "charge"); n != 1 || charged != 0 {
			w.t.Fatalf("%d charge results, %d charges after the restore; want 1 and 0", n, charged)
		}
	}}},
	{name: "delegated", make: (*world).delegated, resumes: map[string]func(*world, string){"decide": func(w *world, sid string) {
		child := sid + "~1"
		w.want(child, session.StatusAwaitingDecision)
		if a := w.boot(nil).serve(w.t, decisionReq(sid, "granted", "grant-1")); a.status/100 != 2 {
			w.t.Fatalf("decision: %d %v", a.status, a.body)
		}
		w.drive(sid)
		w.want(sid, session.StatusCompleted)
		w.want(child, session.StatusCompleted)
		if last := w.messages(sid); last[len(last)-1]["text"] != "The owner signed off the east lab." {
			w.t.Fatalf("the desk ended %v", last[len(last)-1])
		}
	}}},
}

// parkedDecision: a shop session charged and parked for the review decision.
func (w *world) parkedDecision() string {
	a := w.boot(nil).serve(w.t, startReq("shop", "Please charge my card for the order.", "order-1"))
	if a.status/100 != 2 {
		w.t.Fatalf("start: %d %v", a.status, a.body)
	}
	sid, _ := a.body["sessionId"].(string)
	w.drive(sid)
	w.want(sid, session.StatusAwaitingDecision)
	return sid
}

// parkedInput: approved, charged for shipping and parked for the courier with a wake.
func (w *world) parkedInput() string {
	sid := w.parkedDecision()
	if a := w.boot(nil).serve(w.t, decisionReq(sid, "ship", "approve-1")); a.status/100 != 2 {
		w.t.Fatalf("decision: %d %v", a.status, a.body)
	}
	w.drive(sid)
	w.want(sid, session.StatusAwaitingInput)
	if w.summary(sid).ResumeAt == "" {
		w.t.Fatal("the courier park has no resumeAt")
	}
	return sid
}

// completed: woken by the timer, charged for delivery and done.
func (w *world) completed() string {
	sid := w.parkedInput()
	w.wakeUp(sid)
	w.want(sid, session.StatusCompleted)
	return sid
}

// interrupted: the process serving the start died right after committing the charge's
// result, holding the lease, its turn unfinished.
func (w *world) interrupted() string {
	charged := func(c *store.Commit) bool {
		for _, m := range c.Messages {
			if bytes.Contains(m, []byte(`"role":"tool"`)) && bytes.Contains(m, []byte(`"tool":"charge"`)) {
				return true
			}
		}
		return false
	}
	// the start hands its turn to a continuation (or runs it in the request): the first
	// process to commit the charge's result dies there
	pr := w.boot(charged)
	pr.serve(w.t, startReq("shop", "Please charge my card for the order.", "order-1"))
	for !pr.p.Dead() {
		w.mu.Lock()
		if len(w.queue) == 0 {
			w.mu.Unlock()
			w.t.Fatal("the turn ended without a charge")
		}
		ref := w.queue[0]
		w.queue = w.queue[1:]
		w.mu.Unlock()
		pr = w.boot(charged)
		_, _ = pr.runner.Handle(w.t.Context(), ref)
	}
	heads, _, err := w.log().List(w.t.Context(), store.ListOptions{})
	if err != nil || len(heads) != 1 {
		w.t.Fatalf("%v, %d sessions", err, len(heads))
	}
	w.mu.Lock()
	w.queue = nil // what the dead process queued never ran
	w.mu.Unlock()
	return heads[0].SessionID
}

// delegated: the desk delegated a sign-off whose child parked for the owner's decision.
func (w *world) delegated() string {
	a := w.boot(nil).serve(w.t, startReq("desk", "Please have the east lab signed off.", "desk-1"))
	if a.status/100 != 2 {
		w.t.Fatalf("start: %d %v", a.status, a.body)
	}
	sid, _ := a.body["sessionId"].(string)
	w.drive(sid)
	w.want(sid, session.StatusAwaitingDecision)
	w.want(sid+"~1", session.StatusAwaitingDecision) // the child session waits for the owner
	return sid
}

// wakeUp advances the clock past the session's resumeAt and delivers its Scheduler wake.
func (w *world) wakeUp(sid string) {
	w.t.Helper()
	sum := w.summary(sid)
	if sum.Pending == nil || sum.ResumeAt == "" {
		w.t.Fatalf("session %s has no timed park: %+v", sid, sum)
	}
	at, err := time.Parse(time.RFC3339, sum.ResumeAt)
	if err != nil {
		w.t.Fatal(err)
	}
	if d := at.Sub(w.clock.Now()); d > 0 {
		w.clock.Advance(d + time.Second)
	}
	raw := []byte(`{"sessionId":"` + sid + `","parkId":"` + sum.Pending.ParkID + `"}`)
	if _, err := w.boot(nil).wake.Handle(w.t.Context(), raw); err != nil {
		w.t.Fatalf("wake: %v", err)
	}
	w.drive(sid)
}
