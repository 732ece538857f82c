// Package crash holds the crash-injection suite of the writing entry points (DESIGN.md §4,
// docs/RELIABILITY.md): for a turn, a decision, a delivery and a wake, the process serving
// the request — or a continuation it handed the turn to — dies before and after each of
// its store writes in turn; the same request is then retried (an HTTP request with its
// Idempotency-Key, a Scheduler wake with its park id) and the session driven to its end as
// a deployment would (continuations and their retries, the sweep) on an injected clock;
// at every kill point the stored session must equal a clean run's. The suite is its
// tests; this file only names the package.
package crash
