package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/archmax-ai/archmax/core/host"
	"github.com/archmax-ai/archmax/core/identity"
	"github.com/archmax-ai/archmax/core/scheduler/local"
	"github.com/archmax-ai/archmax/core/session"
	authz "github.com/archmax-ai/archmax/functions/handlers/access"
	"github.com/archmax-ai/archmax/functions/handlers/continuation"
	"github.com/archmax-ai/archmax/functions/handlers/httpapi"
	"github.com/archmax-ai/archmax/functions/handlers/stream"
	"github.com/archmax-ai/archmax/functions/handlers/wakes"
	"github.com/archmax-ai/archmax/local/apigw"
	"github.com/archmax-ai/archmax/local/runner"
)

type serveFlags struct {
	workspace, store, modelScript, modelID, region, addr string
	bedrock                                              bool
	sweepEvery, invocationTimeout, modelTimeout          time.Duration
	continueMargin                                       time.Duration
	allowHosts                                           []string
	token                                                string
	principal                                            string // the one local caller (Issue 17)
	fourEyes                                             bool
}

// envServeToken is the bearer token `archmax serve` requires when --token is not given.
const envServeToken = "ARCHMAX_SERVE_TOKEN"

func newServeCommand() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve [flags]",
		Short: "Serve the session HTTP API locally, with timed wakes",
		Long: `Serve the HTTP routes of the turn, decide, deliver and sessions Lambdas on --addr, in front of the same
handlers the Lambdas run (an emulated API Gateway HTTP API), over the local session store:

  POST /v1/workflows/{workflow}/sessions                      start a session
  POST /v1/workflows/{workflow}/sessions/{sessionId}/turns    a message (a turn, a reply, a delivery)
  POST /v1/sessions/{sessionId}/decision                      {to, comment?, parkId?}
  POST /v1/sessions/{sessionId}/deliveries                    {trigger, variables?, message?, files?, parkId?}
  GET  /v1/sessions, /v1/sessions/{sessionId}, …/messages?after=N, …/events?after=N
  DELETE /v1/sessions/{sessionId}                             delete it and everything of it (204)

With 'Accept: text/event-stream' a start or a turn streams its events as Server-Sent Events and ends
with an 'outcome' event, and …/events follows the session until it settles (Last-Event-ID resumes).

A request answers 200 with the outcome when its turn settled, else 202 with kind "running" at once,
or after 'Prefer: wait=N' seconds (N <= 25); the turn goes on in the background as the Lambdas'
continuations do, and GET /v1/sessions/{sessionId} shows when it settled. A continuation
runs at most --invocation-timeout, then hands the turn on to a fresh one.

A park with a resumeAt (archmax_wait with 'until') is woken by an in-process timer at that
time; at start the timers of every stored timed park are re-armed (an overdue one wakes at
once), and a sweep every --sweep-every catches any wake that failed and, with retention configured
(the host file's retention:, else ARCHMAX_SESSION_TTL), deletes the sessions whose retention
expired. Turns an earlier process
left running are continued at start. Ctrl-C stops: in-flight requests get 10 s, background
turns commit what ran and are continued by the next start.

The server runs turns on your model credentials and serves every transcript, so a web page
must not reach it. It answers only for Host localhost and loopback addresses, the names given
by --allow-host (repeatable; NAME or NAME:PORT) and, on a non-loopback --addr, any IP address
(else 421 MisdirectedHostError: DNS rebinding). A browser request from another origin — an
Origin other than http:// or https:// and the request's Host, Origin null, or Sec-Fetch-Site cross-site or
same-site — is 403 ForbiddenOriginError on every route; a browser request (Origin or
Sec-Fetch-Site present) whose body is not application/json is 415 UnsupportedMediaTypeError. No
CORS is granted. curl and scripts send no Origin and are not affected.

On a non-loopback --addr (0.0.0.0, a LAN address) every request needs
'Authorization: Bearer <token>': the token of --token or ` + envServeToken + `, else a random
one printed at start (else 401 UnauthorizedError). A loopback --addr requires a token only when
one is given. Prefer the environment variable: a --token value shows in the process list.`,
		Example: `  archmax serve --workspace fixtures/access-desk \
    --model-script fixtures/access-desk/model-scripts/happy.model.yaml
  curl -s localhost:8080/v1/workflows/access-request/sessions -H 'Prefer: wait=10' \
    -d '{"message":"I need the east lab"}'
  ARCHMAX_SERVE_TOKEN=$(openssl rand -hex 24) archmax serve --addr 0.0.0.0:8080 --allow-host devbox.lan …`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			env, err := loadDotenv(f.workspace)
			if err != nil {
				return usageError{err}
			}
			if f.modelScript, f.bedrock, err = modelChoice(f.modelScript, f.bedrock, env); err != nil {
				return usageError{err}
			}
			if f.bedrock {
				if err := bedrockPreflight(cmd.Context(), f.region, f.modelID); err != nil { // awscheck.go
					return err
				}
			}
			switch {
			case f.sweepEvery < time.Second:
				return usageError{errors.New("--sweep-every must be at least 1s")}
			case f.modelTimeout <= 0 || f.continueMargin <= 0 || f.invocationTimeout <= f.modelTimeout+f.continueMargin:
				return usageError{fmt.Errorf("--invocation-timeout (%s) must be longer than --model-timeout (%s) plus --continue-margin (%s), all positive: a continuation needs time for at least one step",
					f.invocationTimeout, f.modelTimeout, f.continueMargin)}
			}
			access := apigw.Policy{AllowHosts: f.allowHosts, Token: f.token}
			tokenFrom := "--token"
			if access.Token == "" {
				access.Token, tokenFrom = os.Getenv(envServeToken), envServeToken
			}
			if err := (apigw.Policy{AllowHosts: f.allowHosts}).Validate(); err != nil {
				return usageError{err}
			}
			if err := access.Validate(); err != nil {
				return usageError{fmt.Errorf("%s: %w", tokenFrom, err)}
			}
			ln, err := net.Listen("tcp", f.addr)
			if err != nil {
				return fmt.Errorf("listen on %s: %w", f.addr, err)
			}
			access.Loopback = apigw.IsLoopback(ln.Addr())
			made := !access.Loopback && access.Token == ""
			if made {
				access.Token = apigw.NewToken()
			}
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			if f.store == "" {
				f.store = filepath.Join(f.workspace, ".archmax") // where run, decide and sessions look too
			}
			srv, err := newServer(cmd.Context(), runner.Options{Workspace: f.workspace, StoreDir: f.store,
				ModelScript: f.modelScript, Bedrock: f.bedrock, ModelID: f.modelID, Region: f.region},
				continuation.Budget{ModelTimeout: f.modelTimeout, Margin: f.continueMargin}, f.invocationTimeout, log,
				httpapi.WithLocalCaller(localCaller(f.principal)), httpapi.WithPolicy(authz.Policy{FourEyes: f.fourEyes}))
			if err != nil {
				ln.Close()
				var se *runner.SettingError
				if errors.As(err, &se) { // an OTEL_* setting that cannot work, as for archmax run
					return usageError{err}
				}
				return err
			}
			defer srv.Close()
			reportUnloadable(cmd.Context(), f.workspace, cmd.ErrOrStderr()) // serveload.go
			fmt.Fprintf(cmd.OutOrStdout(), "archmax serve: listening on http://%s (workspace %s, store %s); Ctrl-C stops\n", ln.Addr(), f.workspace, f.store)
			switch {
			case made:
				fmt.Fprintf(cmd.OutOrStdout(), "archmax serve: not loopback-only: every request needs the header 'Authorization: Bearer %s' (made for this start; set %s to keep one)\n",
					access.Token, envServeToken)
			case access.Token != "":
				fmt.Fprintf(cmd.OutOrStdout(), "archmax serve: every request needs the header 'Authorization: Bearer <the %s token>'\n", tokenFrom)
			}
			return srv.Serve(cmd.Context(), ln, f.sweepEvery, access)
		},
	}
	fl := cmd.Flags()
	fl.SetNormalizeFunc(rootAlias)
	fl.StringVar(&f.workspace, "workspace", ".", "the authored workspace: workflows/, skills/, AGENTS.md (also --root DIR)")
	fl.StringVar(&f.store, "store", "", "directory of the local session store (default: .archmax/ in the workspace)")
	fl.StringVar(&f.modelScript, "model-script", "", "serve this scripted model (docs/authoring/scripted-model.md) through the Converse fake (else ARCHMAX_MODEL_SCRIPT)")
	fl.BoolVar(&f.bedrock, "bedrock", false, "call Amazon Bedrock (standard AWS credential chain; the default when ARCHMAX_MODEL is set)")
	fl.StringVar(&f.modelID, "model", "", "default model id (else ARCHMAX_MODEL)")
	fl.StringVar(&f.region, "region", "", "AWS region for --bedrock (else AWS_REGION)")
	fl.StringVar(&f.addr, "addr", "127.0.0.1:8080", "address to listen on (not loopback: every request needs the bearer token)")
	fl.StringArrayVar(&f.allowHosts, "allow-host", nil, "also answer for this Host, NAME or NAME:PORT (repeatable): the name a proxy, container or other machine uses")
	fl.StringVar(&f.token, "token", "", "require 'Authorization: Bearer TOKEN' on every request (else "+envServeToken+"; a non-loopback --addr makes one)")
	fl.StringVar(&f.principal, "principal", identity.DefaultLocal, "the name of the one caller every request is made by (an admin: it reads and acts on every session)")
	fl.BoolVar(&f.fourEyes, "four-eyes", false, "the decider must not be who started the session (ARCHMAX_FOUR_EYES): with one principal, its own sessions cannot be decided")
	fl.DurationVar(&f.sweepEvery, "sweep-every", time.Minute, "how often overdue parks are swept and, with retention configured, expired sessions deleted")
	fl.DurationVar(&f.invocationTimeout, "invocation-timeout", 15*time.Minute, "how long one continuation may run (Lambda's timeout) before it hands the turn on")
	fl.DurationVar(&f.modelTimeout, "model-timeout", continuation.DefaultModelTimeout, "time kept free for one model call before an invocation's end (ARCHMAX_MODEL_TIMEOUT)")
	fl.DurationVar(&f.continueMargin, "continue-margin", continuation.DefaultMargin, "time kept beyond it for the step's tools and commit (ARCHMAX_CONTINUE_MARGIN)")
	return withMemoryLimit(cmd) // --memory-limit (memlimit.go)
}

// server is the local stand-in of the deployed bundle: the HTTP routes of the turn,
// decide, deliver and sessions functions, and the wake function driven by an in-process timer loop
// (DESIGN.md §5), re-armed at start, plus a periodic sweep.
type server struct {
	env     *runner.Env
	engines *host.Engines
	loop    *local.Loop
	async   *continuation.InProcess
	wakes   *wakes.Handler
	http    http.Handler
	log     *slog.Logger
}

// localCaller is serve's one principal, called name: an admin (Issue 17).
func localCaller(name string) authz.Caller {
	return authz.Caller{Principal: identity.LocalPrincipal(name), Admin: true}
}

// newServer assembles the local environment (log nil discards); continuations run in
// process, each for at most invocation. Every request is made by localCaller("") unless
// httpOpts say otherwise. Close releases it.
func newServer(ctx context.Context, opts runner.Options, budget continuation.Budget, invocation time.Duration, log *slog.Logger, httpOpts ...httpapi.Option) (*server, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &server{log: log}
	s.loop = local.New(s.fire)
	opts.Scheduler = s.loop
	env, err := runner.Open(ctx, opts)
	if err != nil {
		s.loop.Close()
		return nil, err
	}
	s.env = env
	env.TracingWarnings(func(msg string) { log.Warn(msg, "scope", "tracing") })
	if s.engines, err = env.Engines(); err != nil {
		s.Close()
		return nil, err
	}
	// retries span a writer lease (2 min), as Lambda's async retries do
	s.async = &continuation.InProcess{Timeout: invocation, Log: log,
		RetryDelays: []time.Duration{time.Second, 5 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute}}
	run := continuation.NewRunner(s.engines, s.async, budget, log)
	s.async.Bind(run)
	s.wakes = wakes.New(s.engines, run, log, nil)
	httpOpts = append([]httpapi.Option{httpapi.WithLocalCaller(localCaller(""))}, httpOpts...)
	api := httpapi.New(s.engines, run, log, httpOpts...)
	// Accept: text/event-stream on a start, a turn or …/events: the streaming function's answer
	s.http = unloadableIs422(apigw.Streaming(apigw.Handler(api.Handle, log), stream.Accepts, stream.New(api, log, stream.WithInvocation(invocation)).HTTP)) // serveload.go
	return s, nil
}

// fire is the timer loop's wake: the wake function's body for the Scheduler's payload. A
// wake that finds the session busy (the parking call still writing its closing message, or
// another turn) is re-armed a second later, as the Scheduler's retry would deliver it again.
func (s *server) fire(sessionID, parkID string) {
	_, err := s.wakes.Wake(context.Background(), sessionID, parkID)
	var busy *session.SessionNotResumableError
	if errors.As(err, &busy) {
		_ = s.loop.Schedule(context.Background(), sessionID, parkID, time.Now().Add(time.Second))
	}
}

// rearm arms a timer for every timed park in the store — the timers of an earlier process
// died with it, and a park due later must still wake on time, not at the next sweep — and
// continues every interrupted turn (an earlier process stopped or died in the middle of it).
func (s *server) rearm(ctx context.Context) error {
	due, err := session.NewSessions(s.engines.Log(), nil, nil).ListDueParks(ctx, time.Now().AddDate(100, 0, 0), 10000)
	if err != nil {
		return fmt.Errorf("list timed parks: %w", err)
	}
	timers, turns := 0, 0
	for _, sum := range due {
		if sum.Status == session.StatusRunning {
			// a lease still live (a writer that died within it) refuses the continuation,
			// which is retried until the lease has lapsed
			if err := s.async.Start(ctx, continuation.Ref{SessionID: sum.SessionID, TurnID: sum.TurnID}); err != nil {
				return err
			}
			turns++
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, sum.ResumeAt)
		if err != nil || sum.Pending == nil {
			continue
		}
		if err := s.loop.Schedule(ctx, sum.SessionID, sum.Pending.ParkID, at); err != nil {
			return err
		}
		timers++
	}
	if timers > 0 {
		s.log.Info("timed parks re-armed", "count", timers)
	}
	if turns > 0 {
		s.log.Info("interrupted turns continued", "count", turns)
	}
	return nil
}

// sweep wakes every overdue park (the wake function's sweep) and deletes the sessions whose
// retention expired (the host file's retention:; on AWS DynamoDB's TTL does it, RD22-12) —
// only while retention is configured: turned off, it deletes none (RD22-16).
func (s *server) sweep(ctx context.Context) {
	s.wakes.Sweep(ctx)
	if err := s.engines.Refresh(ctx); err != nil {
		return // the host file does not load: its retention is not known, nothing is deleted
	}
	n, err := s.engines.DeleteExpiredBy(ctx, time.Now(), s.log)
	if n > 0 {
		s.log.Info("expired sessions deleted", "count", n)
	}
	if err != nil {
		s.log.Warn("expired sessions not all deleted; the next sweep tries again", "error", err.Error())
	}
}

// Serve answers HTTP on ln behind access's guard (its Loopback is ln's: a listener that is
// not loopback-only needs access.Token) and sweeps every sweepEvery until ctx ends, then
// shuts down gracefully (in-flight turns get 10 s to finish).
func (s *server) Serve(ctx context.Context, ln net.Listener, sweepEvery time.Duration, access apigw.Policy) error {
	access.Loopback = apigw.IsLoopback(ln.Addr())
	guarded, err := apigw.Guard(s.http, access, s.log)
	if err != nil {
		ln.Close()
		return err
	}
	hs := &http.Server{Handler: guarded, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	if err := s.rearm(ctx); err != nil {
		s.log.Warn("timed parks not re-armed; the sweep wakes them", "error", err.Error())
	}
	tick := time.NewTicker(sweepEvery)
	defer tick.Stop()
	for {
		select {
		case err := <-errc:
			return err
		case <-tick.C:
			s.sweep(ctx)
		case <-ctx.Done():
			shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := hs.Shutdown(shutdown); err != nil {
				return err
			}
			return nil
		}
	}
}

// Close stops the timers and the continuations (each commits what ran and leaves its turn
// interrupted, for the next process to continue), then the model fake.
func (s *server) Close() {
	s.loop.Close()
	if s.async != nil {
		s.async.Stop()
	}
	if s.env != nil {
		_ = s.env.Close()
	}
}
