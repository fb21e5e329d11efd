package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"os/signal"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/cache"
	"github.com/agenthost/agenthost/host/credential"
	"github.com/agenthost/agenthost/host/jobs/natsexec"
	"github.com/agenthost/agenthost/host/llm"
	"github.com/agenthost/agenthost/host/profile"
	"github.com/agenthost/agenthost/host/serve"
	"github.com/agenthost/agenthost/host/store"
)

// serveFlags are the flags of `serve`.
type serveFlags struct {
	addr, auth, data, store, credKey, otlp, instance string
	otlpSample                                       float64
	drain                                            time.Duration
	profiles                                         multiFlag
	noAuth, mcpCodeMode                              bool
	nats                                             natsFlags
	receipt                                          receiptFlags
}

func serveCommand() command {
	return command{
		name: "serve", serves: true, usage: "serve [--addr HOST:PORT] [--auth FILE | --no-auth] [--data DIR | --store postgres://…] [--profiles DIR]...",
		summary: "the host over HTTP: tools, exec, MCP at /mcp, sessions and AG-UI agent runs, history, metrics",
		flags: func(fs *flag.FlagSet, e *env) {
			s := &e.serve
			fs.StringVar(&s.addr, "addr", "127.0.0.1:8080", "the `HOST:PORT` to listen on (without --auth: loopback only)")
			fs.StringVar(&s.auth, "auth", "", "tokens and tenants `FILE` (YAML or JSON); without it one tenant, loopback only, and a token printed once on stderr")
			fs.StringVar(&s.data, "data", "", "the `DIR` of the SQLite history database (default <cache>/serve)")
			fs.StringVar(&s.store, "store", "", "a PostgreSQL `URL` (postgres://…) for the history, shared by several serve instances (instead of --data)")
			fs.StringVar(&s.instance, "instance", "", "this server's `NAME` among those sharing a --store (default: random); restarted under the same name, it ends its own unfinished jobs at once instead of when their leases expire")
			fs.StringVar(&e.approve.key, "approval-key", "", "an HMAC key `FILE` (32+ bytes, raw or hex) that signs the approval states of MCP's input_required round trips, so that serve instances sharing it take each other's retries (default: a random key per process)")
			fs.StringVar(&s.credKey, "credential-key", "", "an HMAC key `FILE` (32+ bytes, raw or hex): tools requesting credentials get a 5-minute token per call, scoped to the tenant and tool")
			fs.StringVar(&s.otlp, "otlp", "", "export a trace span per tool call (execute_tool, generative-AI attributes) over OTLP/HTTP to `URL` (e.g. http://127.0.0.1:4318)")
			fs.Float64Var(&s.otlpSample, "otlp-sample", 1, "the `RATIO` of calls traced with --otlp (0 < RATIO ≤ 1; a span follows its parent's decision)")
			s.nats.register(fs, "run tool calls on workers (agenthost worker) over the NATS JetStream server at `URL` instead of in this process")
			fs.DurationVar(&s.drain, "drain-timeout", 30*time.Second, "on SIGTERM or SIGINT, how long the calls, runs and jobs in progress may go on to finish (nothing new starts); past it the jobs still running are stopped and answer MAY_HAVE_RUN")
			fs.BoolVar(&s.mcpCodeMode, "mcp-code-mode", false, "also serve run_code and search_tools at /mcp (a program that calls the tenant's tools as functions; docs/CODEMODE.md)")
			fs.BoolVar(&s.noAuth, "no-auth", false, "take every request without a token, as the one tenant with every scope (loopback only: for local clients that cannot send a token, such as the MCP conformance suite)")
			s.receipt.register(fs)
			fs.Var(&s.profiles, "profiles", "a `DIR` of agent profiles (*.profile.json, agent_profile.json) for the tenant without --auth (repeatable)")
		},
		run: runServe,
	}
}

func runServe(ctx context.Context, e *env, args []string) error {
	if len(args) != 0 {
		return usageError{"serve takes no arguments"}
	}
	s := e.serve
	host_, _, err := net.SplitHostPort(s.addr)
	if err != nil {
		return usageError{"--addr: " + err.Error()}
	}
	switch {
	case s.noAuth && s.auth != "":
		return usageError{"give --auth or --no-auth, not both"}
	case s.noAuth && !isLoopback(host_):
		return usageError{"--no-auth takes every request without a token, so serve listens on a loopback address only (127.0.0.1, ::1, localhost), not " + host_}
	case s.auth == "" && !isLoopback(host_):
		return usageError{"without --auth, serve listens on a loopback address only (127.0.0.1, ::1, localhost)"}
	}
	if s.drain <= 0 {
		return usageError{"--drain-timeout must be above 0"}
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	root, err := cache.Resolve(e.cacheDir)
	if err != nil {
		return usageError{err.Error()}
	}
	// The queue first: a refused server or a missing key is said before
	// anything else starts.
	var nc *nats.Conn
	var natsKey []byte
	if s.nats.url != "" {
		if nc, natsKey, err = s.nats.connect(ctx, e, "serve"); err != nil {
			return err
		}
		defer nc.Close()
	}
	dsn := s.store
	switch {
	case dsn != "" && s.data != "":
		return usageError{"give --store or --data, not both"}
	case dsn != "" && !strings.HasPrefix(dsn, "postgres://") && !strings.HasPrefix(dsn, "postgresql://"):
		return usageError{"--store takes a postgres:// URL (SQLite is --data DIR)"}
	case dsn == "":
		data := e.serveData(root)
		if err := os.MkdirAll(data, 0o700); err != nil {
			return usageError{err.Error()}
		}
		dsn = filepath.Join(data, "agenthost.db")
	}
	st, err := store.Open(ctx, dsn)
	if err != nil {
		return err
	}
	defer st.Close()
	// Every call of every tenant yields a receipt in the history; the
	// recorder closes after the hosts (deferred later, run earlier).
	stopReceipts, err := e.startReceipts(st, s.receipt)
	if err != nil {
		return err
	}
	defer stopReceipts()
	var auth *serve.Authenticator
	var token string
	if s.otlpSample <= 0 || s.otlpSample > 1 {
		return usageError{"--otlp-sample must be above 0 and at most 1"}
	}
	if s.otlp != "" {
		exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(s.otlp))
		if err != nil {
			return usageError{"--otlp: " + err.Error()}
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp),
			sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(s.otlpSample))),
			sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "agenthost"))))
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = tp.Shutdown(sctx)
		}()
		e.tracer = tp.Tracer("github.com/agenthost/agenthost")
	}
	if s.credKey != "" {
		iss, err := credential.LoadHMAC(s.credKey)
		if err != nil {
			return usageError{err.Error()}
		}
		e.issuer = iss
	}
	e.protected = []string{s.auth, s.credKey, s.receipt.key, e.approve.key}
	tenants, hosts, af, err := e.buildTenants(ctx, root, s.auth, s.profiles)
	defer func() {
		for _, h := range hosts {
			h.Close(context.Background())
		}
	}()
	if err != nil {
		return err
	}
	if af != nil {
		if auth, err = serve.NewAuthenticatorFile(af); err != nil {
			return usageError{err.Error()}
		}
	} else if s.noAuth {
		auth = serve.NoAuth("default")
	} else {
		auth, token = serve.SingleToken("default")
	}
	var remote func(context.Context, string, string, json.RawMessage) (abi.Envelope, error)
	var depth func() (int64, error)
	var collectors []prometheus.Collector
	if nc != nil {
		d, err := natsexec.NewDispatcher(ctx, nc, natsexec.Options{Key: natsKey, Logger: e.log.Named("queue")})
		if err != nil {
			return err
		}
		remote = d.Call
		collectors = append(collectors, d)
		depth = func() (int64, error) {
			qctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			return d.Depth(qctx)
		}
	}
	api, err := serve.New(serve.Options{Tenants: tenants, Auth: auth, Store: st, Logger: e.log.Named("serve"), Remote: remote, QueueDepth: depth, Collectors: collectors, Instance: s.instance, MCPCodeMode: s.mcpCodeMode})
	if err != nil {
		return err
	}
	defer api.Close()
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return usageError{err.Error()}
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); s.auth == "" && (!ok || !tcp.IP.IsLoopback()) {
		// A name such as localhost can resolve to a routable address.
		ln.Close()
		return usageError{fmt.Sprintf("without --auth, serve listens on a loopback address only; %s is %s", s.addr, ln.Addr())}
	}
	srv := api.HTTPServer()
	msg := e.messages()
	fmt.Fprintf(msg, "agenthost: serving on http://%s (%d tenant(s))\n", ln.Addr(), len(tenants))
	if token != "" {
		// One line to open: the console takes the token from the
		// address and drops it from the address bar.
		fmt.Fprintf(msg, "agenthost: open the console (the token is shown once): http://%s/#token=%s\n", ln.Addr(), token)
	}
	if s.noAuth {
		fmt.Fprintln(msg, "agenthost: --no-auth: every request on this loopback address is the tenant \"default\" with every scope")
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	fmt.Fprintf(msg, "agenthost: draining (up to %s)\n", s.drain)
	api.Drain()
	sctx, cancel := context.WithTimeout(context.Background(), s.drain)
	defer cancel()
	err = srv.Shutdown(sctx)
	if err == nil || errors.Is(err, http.ErrServerClosed) {
		if err = api.Wait(sctx); err == nil {
			return nil
		}
	}
	// Past the drain timeout: the calls still running are stopped and
	// answer MAY_HAVE_RUN (a job ends interrupted), and their clients get
	// that answer, not a reset connection, within answerGrace.
	api.Interrupt()
	gctx, gcancel := context.WithTimeout(context.Background(), answerGrace)
	defer gcancel()
	_ = srv.Shutdown(gctx)
	return err
}

// answerGrace bounds how long serve, past its drain timeout, waits for
// the calls it stopped to send their MAY_HAVE_RUN answers.
const answerGrace = 5 * time.Second

func isLoopback(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// loadProfiles reads the profiles of dirs (*.profile.json and
// agent_profile.json), by ID.
func loadProfiles(dirs []string) (map[string]*profile.Profile, error) {
	out := map[string]*profile.Profile{}
	for _, d := range dirs {
		entries, err := os.ReadDir(d)
		if err != nil {
			return nil, usageError{err.Error()}
		}
		for _, ent := range entries {
			n := ent.Name()
			if ent.IsDir() || !(strings.HasSuffix(n, ".profile.json") || n == "agent_profile.json") {
				continue
			}
			p, err := profile.Load(filepath.Join(d, n))
			if err != nil {
				return nil, usageError{err.Error()}
			}
			if prev, dup := out[p.ID]; dup {
				return nil, usageError{fmt.Sprintf("profile %q is defined twice: %s and %s", p.ID, prev.Path, p.Path)}
			}
			out[p.ID] = p
		}
	}
	return out, nil
}

// profileProvider builds a profile's model provider for one run (a
// replay transcript is read afresh each time).
func profileProvider(p *profile.Profile) (llm.Provider, string, error) {
	m := p.Model
	if m == nil {
		return nil, "", fmt.Errorf("profile %s names no model", p.ID)
	}
	a := agentFlags{provider: m.Provider, baseURL: m.BaseURL, model: m.Name, apiKeyEnv: m.APIKeyEnv, replay: m.Replay, stream: m.Stream}
	if a.replay != "" && !filepath.IsAbs(a.replay) {
		a.replay = filepath.Join(filepath.Dir(p.Path), a.replay)
	}
	if a.provider == "replay" {
		a.model = "replay"
	}
	prov, err := newProvider(a)
	if err != nil {
		return nil, "", fmt.Errorf("profile %s: %w", p.ID, err)
	}
	return prov, a.model, nil
}

// serveData is the server's data folder: --data, else <cache>/serve. It
// holds the SQLite history and the private workspaces.
func (e *env) serveData(root string) string {
	if e.serve.data != "" {
		return e.serve.data
	}
	return filepath.Join(root, "serve")
}

// buildTenants builds one host per tenant: from an auth file (each
// tenant's policy and profile folders, relative to it) or, without one,
// the tenant "default" with the global policy and profiles. Each tenant's
// cache is its own folder under root.
//
// A tenant without a policy of its own (in the auth file without
// `policy`; the default tenant without --policy) gets the global policy's
// ceilings, or the built-in ones, over an empty private workspace of its
// own, <data>/workspaces/<tenant>: never the server's working folder, and
// never a folder another tenant sees. A tenant's own policy keeps its
// workspace, which checkWorkspaces then checks.
func (e *env) buildTenants(ctx context.Context, root, authPath string, profiles []string) (map[string]*serve.Tenant, []*host.Host, *serve.AuthFile, error) {
	tenants := map[string]*serve.Tenant{}
	var hosts []*host.Host
	data := e.serveData(root)
	own := map[string]string{}
	// One approval broker for every tenant: its bounds on waiting calls are the server's (approve.go).
	if err := e.serveApprovals(); err != nil {
		return nil, nil, nil, err
	}
	add := func(name, policyFile string, profileDirs []string) error {
		saved, savedCache := e.policy, e.cacheDir
		defer func() { e.policy, e.cacheDir, e.workspace = saved, savedCache, "" }()
		if policyFile != "" {
			e.policy, own[name] = policyFile, policyFile
		} else {
			ws := filepath.Join(data, "workspaces", name)
			if err := os.MkdirAll(ws, 0o700); err != nil {
				return fmt.Errorf("tenant %s: its workspace: %w", name, err)
			}
			e.workspace = ws
		}
		e.cacheDir = filepath.Join(root, "tenants", name)
		e.tenant = name
		h, err := e.newHost(ctx)
		if err != nil {
			return err
		}
		hosts = append(hosts, h)
		profs, err := loadProfiles(profileDirs)
		if err != nil {
			return err
		}
		tenants[name] = &serve.Tenant{Name: name, Host: h, Profiles: profs, Provider: profileProvider}
		return nil
	}
	// The cache folder holds every tenant's $CACHE and compiled modules.
	files := []serverFile{{root, "the cache folder"}}
	if e.serve.credKey != "" {
		files = append(files, serverFile{e.serve.credKey, "the credential key"})
	}
	if e.serve.store == "" {
		files = append(files, serverFile{filepath.Join(data, "agenthost.db"), "the history database"})
	}
	if e.serve.receipt.key != "" {
		files = append(files, serverFile{e.serve.receipt.key, "the receipt signing key"})
	}
	if e.approve.key != "" {
		files = append(files, serverFile{e.approve.key, "the approval key"})
	}
	if authPath == "" {
		if err := add("default", e.policy, profiles); err != nil {
			return nil, hosts, nil, err
		}
		return tenants, hosts, nil, checkWorkspaces(tenants, own, files)
	}
	af, err := serve.LoadAuthFile(authPath)
	if err != nil {
		return nil, hosts, nil, usageError{err.Error()}
	}
	files = append(files, serverFile{authPath, "the auth file"})
	if e.policy != "" {
		files = append(files, serverFile{e.policy, "the global policy (--policy)"})
	}
	base := filepath.Dir(authPath)
	for name, t := range af.Tenants {
		pol := t.Policy
		if pol != "" && !filepath.IsAbs(pol) {
			pol = filepath.Join(base, pol)
		}
		var dirs []string
		for _, d := range t.Profiles {
			if !filepath.IsAbs(d) {
				d = filepath.Join(base, d)
			}
			dirs = append(dirs, d)
		}
		if err := add(name, pol, dirs); err != nil {
			return nil, hosts, nil, err
		}
	}
	return tenants, hosts, af, checkWorkspaces(tenants, own, files)
}

// serverFile is a file of the server that no tenant may read.
type serverFile struct{ path, what string }

// checkWorkspaces refuses a tenant whose workspace holds a file of the
// server (the auth file, the credential key, the history database, the
// global policy, the cache folder), another tenant's policy file or
// another tenant's workspace: whatever a tool may read there, the tenant
// reads. own maps the tenants with a policy of their own to its file.
func checkWorkspaces(tenants map[string]*serve.Tenant, own map[string]string, files []serverFile) error {
	names := make([]string, 0, len(tenants))
	for name := range tenants {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, a := range names {
		ws := tenants[a].Host.Policy().Workspace
		held := ""
		for _, f := range files {
			if held == "" && within(ws, f.path) {
				held = f.what + " " + f.path
			}
		}
		for _, b := range names {
			switch {
			case held != "" || b == a:
			case own[b] != "" && within(ws, own[b]):
				held = fmt.Sprintf("the policy of tenant %q (%s)", b, own[b])
			case within(ws, tenants[b].Host.Policy().Workspace):
				held = fmt.Sprintf("the workspace of tenant %q (%s)", b, tenants[b].Host.Policy().Workspace)
			}
		}
		if held != "" {
			return configError{fmt.Errorf("tenant %q: its workspace %s holds %s; give the tenant's policy a folder of its own that holds none of the server's files nor another tenant's (workspace: DIR, relative to the policy file), or no policy for an empty private workspace", a, ws, held)}
		}
	}
	return nil
}

// within reports whether path is dir or inside it, symbolic links
// resolved.
func within(dir, path string) bool {
	rel, err := filepath.Rel(resolved(dir), resolved(path))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// resolved is p absolute with its symbolic links resolved, as far as it
// exists.
func resolved(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		p = a
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	if r, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
		return filepath.Join(r, filepath.Base(p))
	}
	return p
}
