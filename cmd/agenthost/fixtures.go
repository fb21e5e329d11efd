package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/host/registry"
)

// Example outcomes, as test prints them.
const (
	outcomePass = "ok"
	outcomeFail = "FAIL"
	outcomeSkip = "SKIP"
)

// exampleTester runs manifest examples as tests: an example without
// fixtures through one host over the folders under test, an example with
// fixtures through a host of its own, built for it.
type exampleTester struct {
	e      *env
	base   *host.Host     // over the folders under test, with the user's policy
	policy *policy.Policy // the user's policy, which fixture hosts start from
}

// exampleResult is one example's outcome.
type exampleResult struct {
	name, outcome, reason string
}

// runAll runs every example of tools, in order.
func (x *exampleTester) runAll(ctx context.Context, tools []*manifest.Tool) []exampleResult {
	var out []exampleResult
	for _, t := range tools {
		for i, ex := range t.Examples {
			name := fmt.Sprintf("%s example %d (%s)", t.ToolID, i+1, ex.Description)
			outcome, reason := x.run(ctx, t, ex)
			out = append(out, exampleResult{name: name, outcome: outcome, reason: reason})
		}
	}
	return out
}

// run runs one example and returns its outcome and the reason for a
// failure or a skip.
func (x *exampleTester) run(ctx context.Context, t *manifest.Tool, ex manifest.Example) (string, string) {
	if reason := missingInterpreter(t); reason != "" {
		return outcomeSkip, reason
	}
	id := t.ToolID + "@" + t.Version
	if ex.Fixtures == nil {
		env := x.base.Call(ctx, id, ex.Input)
		if reason := isolationMissing(env); reason != "" {
			return outcomeSkip, reason
		}
		if host, ok := networkDenial(env); ok {
			return outcomeSkip, fmt.Sprintf("needs the network (%s) and has no canned response for it: give the example fixtures.http", host)
		}
		return judge(env, ex.ExpectedOutput, nil)
	}
	fx, err := x.setUp(ctx, t, ex.Fixtures)
	if err != nil {
		return outcomeFail, "fixtures: " + err.Error()
	}
	defer fx.close(ctx)
	input, err := rewriteStrings(ex.Input, fx.toLoopback)
	if err != nil {
		return outcomeFail, "input: " + err.Error()
	}
	env := fx.host.Call(ctx, id, input)
	if reason := isolationMissing(env); reason != "" {
		return outcomeSkip, reason
	}
	outcome, reason := judge(env, ex.ExpectedOutput, fx.toOriginal)
	if host, ok := networkDenial(env); ok {
		reason = fmt.Sprintf("called %s, which has no canned response in fixtures.http (%s)", host, reason)
	}
	if outcome == outcomeFail {
		if missed := fx.unmatched(); len(missed) > 0 {
			reason += "; requests without a canned response (answered 404): " + strings.Join(missed, ", ")
		}
	}
	return outcome, reason
}

// judge compares a call's envelope with the expected output, after
// rewriting the loopback origins in the output back (mapBack may be nil).
func judge(env abi.Envelope, expected json.RawMessage, mapBack func(string) string) (string, string) {
	if env.Status != abi.StatusSuccess {
		return outcomeFail, fmt.Sprintf("the call failed: %s", env.Error)
	}
	if len(bytes.TrimSpace(expected)) == 0 {
		return outcomePass, ""
	}
	output := env.Output
	if mapBack != nil {
		var err error
		if output, err = rewriteStrings(output, mapBack); err != nil {
			return outcomeFail, "output: " + err.Error()
		}
	}
	var got, want any
	if json.Unmarshal(output, &got) != nil || json.Unmarshal(expected, &want) != nil || !reflect.DeepEqual(got, want) {
		return outcomeFail, fmt.Sprintf("output %s, expected %s", compactJSON(output), compactJSON(expected))
	}
	return outcomePass, ""
}

// networkDenial reports whether a call failed because a host was outside
// its grant, and which host.
func networkDenial(env abi.Envelope) (string, bool) {
	if env.Error == nil || env.Error.Code != abi.CodePermissionDenied {
		return "", false
	}
	if d, ok := env.Error.Details.(map[string]string); ok && d["host"] != "" {
		return d["host"], true
	}
	if d, ok := env.Error.Details.(map[string]any); ok {
		if h, _ := d["host"].(string); h != "" {
			return h, true
		}
	}
	if f := strings.Fields(env.Error.Message); len(f) > 3 && strings.HasPrefix(env.Error.Message, "network access to ") {
		return f[3], true
	}
	return "", false
}

// isolationMissing says why a script tool's call could not run on this
// machine ("" when that is not why it failed): the kernel isolation the
// script bridge needs is unavailable and the policy does not allow less.
func isolationMissing(env abi.Envelope) string {
	if env.Error == nil || env.Error.Code != abi.CodePermissionDenied || !strings.Contains(env.Error.Message, "kernel isolation unavailable") {
		return ""
	}
	return "needs kernel isolation this machine lacks (" + env.Error.Message + "); run it on Linux with Landlock and namespaces, or allow isolation.allowDegraded in a test policy"
}

// scriptPrograms is the program each script language needs on PATH.
var scriptPrograms = map[string]string{"python": "python3", "nodejs": "node", "bun": "bun"}

// missingInterpreter says why a script tool cannot run on this machine
// ("" when it can).
func missingInterpreter(t *manifest.Tool) string {
	if t.Handler.Type != manifest.HandlerScript {
		return ""
	}
	prog := scriptPrograms[t.Handler.Language]
	if prog == "" {
		return ""
	}
	if _, err := exec.LookPath(prog); err != nil {
		return fmt.Sprintf("a %s script needs %s on PATH, which this machine lacks", t.Handler.Language, prog)
	}
	return ""
}

// loadSkip says why a manifest that failed to load needs what a test
// cannot have ("" when its failure is a real one).
func loadSkip(f registry.Failure, hasIssuer bool) string {
	data, err := os.ReadFile(f.Path)
	if err != nil {
		return ""
	}
	t, err := manifest.Parse(data, f.Path)
	if err != nil {
		return ""
	}
	switch {
	case t.Handler.Type == manifest.HandlerServiceMethod:
		return fmt.Sprintf("%s is a Go function (service %s, method %s) that a host application registers: test it from that application (host.RunExamples)",
			t.ToolID, t.Handler.ServiceName, t.Handler.MethodName)
	case t.SecurityContext != nil && len(t.SecurityContext.Credentials) > 0 && !hasIssuer:
		return fmt.Sprintf("%s needs the credentials %s, which only a host with a credential issuer mints (agenthost serve --credential-key)",
			t.ToolID, strings.Join(t.SecurityContext.Credentials, ", "))
	}
	return ""
}

// fixture is the set-up of one example: its host, its loopback servers
// and its scratch folder.
type fixture struct {
	dir     string
	host    *host.Host
	servers []*cannedServer
	// origins maps each fixture origin (https://api.example.com) to its
	// server's (http://127.0.0.1:PORT).
	origins map[string]string
}

// setUp builds what ex's fixtures describe: a copy of the workspace
// folder, a loopback server per origin of the canned responses, a copy of
// the tool whose network request names only those servers, and a host
// over that copy whose policy grants the workspace copy and the servers.
// Everything else comes from the user's policy.
func (x *exampleTester) setUp(ctx context.Context, t *manifest.Tool, f *manifest.Fixtures) (*fixture, error) {
	dir, err := os.MkdirTemp("", "agenthost-test-")
	if err != nil {
		return nil, err
	}
	fx := &fixture{dir: dir, origins: map[string]string{}}
	if err := x.build(ctx, t, f, fx); err != nil {
		fx.close(ctx)
		return nil, err
	}
	return fx, nil
}

// build is setUp's work, into fx.
func (x *exampleTester) build(ctx context.Context, t *manifest.Tool, f *manifest.Fixtures, fx *fixture) error {
	dir := fx.dir
	p := *x.policy
	p.Tools = maps.Clone(p.Tools)
	over, hasOver := p.Tools[t.ToolID]
	if f.Workspace != "" {
		src, err := manifest.ResolveFolderInside(t.Dir, f.Workspace)
		if err != nil {
			return fmt.Errorf("workspace %s: %w", f.Workspace, err)
		}
		ws := filepath.Join(dir, "workspace")
		// Copies, not links: a tool that rewrites a file must not reach
		// the toolpack's own through a shared inode.
		if err := copyTree(src, ws, false, nil); err != nil {
			return fmt.Errorf("workspace %s: %w", f.Workspace, err)
		}
		// The workspace is a throwaway copy: the tool gets what it asks
		// for in it, so the test checks the tool and not the policy.
		p.Workspace = ws
		p.FileAccess = policy.FileAccess{AllowRead: []string{"**"}, AllowWrite: []string{"**"}}
		over.FileAccess = nil
	}
	dirs := []string{t.Dir}
	if len(f.HTTP) > 0 {
		hosts, err := x.serve(t, f.HTTP, fx)
		if err != nil {
			return err
		}
		p.NetworkAccess = policy.NetworkAccess{AllowHosts: hosts, AllowPrivateAddresses: true}
		over.NetworkAccess = nil
		pack := filepath.Join(dir, "pack")
		if err := copyTool(t, pack, hosts); err != nil {
			return err
		}
		dirs = []string{pack}
	}
	if hasOver {
		p.Tools[t.ToolID] = over
	}
	if err := p.Validate(); err != nil {
		return fmt.Errorf("test policy: %w", err)
	}
	var err error
	fx.host, err = host.New(ctx, host.Options{Dirs: dirs, Policy: &p, Logger: x.e.log, CacheDir: x.e.cacheDir,
		Credentials: x.e.issuer, Tenant: x.e.tenant})
	if err != nil {
		return err
	}
	if _, err := fx.host.Tool(t.ToolID + "@" + t.Version); err != nil {
		for _, lf := range fx.host.Failures() {
			err = fmt.Errorf("%w; %v", err, lf.Err)
		}
		return err
	}
	return nil
}

// serve starts one loopback server per origin of the canned responses
// and returns the host rules that grant them. A URL the tool's own
// network request does not cover is an error: the example could never
// reach it outside a test.
func (x *exampleTester) serve(t *manifest.Tool, canned []manifest.HTTPFixture, fx *fixture) ([]string, error) {
	var request policy.Grant
	if t.SecurityContext != nil && t.SecurityContext.NetworkAccess != nil {
		for _, h := range t.SecurityContext.NetworkAccess.AllowHosts {
			r, err := policy.ParseHostRule(h)
			if err != nil {
				return nil, err
			}
			request.Hosts = append(request.Hosts, r)
		}
	}
	byOrigin := map[string]*cannedServer{}
	var hosts []string
	for _, c := range canned {
		u, err := url.Parse(c.URL)
		if err != nil {
			return nil, err
		}
		port := 80
		if u.Scheme == "https" {
			port = 443
		}
		if u.Port() != "" {
			port, _ = strconv.Atoi(u.Port())
		}
		if !request.AllowsHost(u.Scheme, u.Hostname(), port) {
			return nil, fmt.Errorf("a canned response for %s, a host the tool's networkAccess.allowHosts does not request", c.URL)
		}
		body := []byte(c.Body)
		if c.BodyFile != "" {
			file, err := manifest.ResolveInside(t.Dir, c.BodyFile)
			if err != nil {
				return nil, fmt.Errorf("bodyFile %s: %w", c.BodyFile, err)
			}
			if body, err = os.ReadFile(file); err != nil {
				return nil, fmt.Errorf("bodyFile %s: %w", c.BodyFile, err)
			}
		}
		origin := u.Scheme + "://" + u.Host
		s := byOrigin[origin]
		if s == nil {
			if s, err = startCanned(); err != nil {
				return nil, err
			}
			byOrigin[origin] = s
			fx.servers = append(fx.servers, s)
			fx.origins[origin] = "http://" + s.addr
			hosts = append(hosts, "http://"+s.addr)
		}
		method := c.Method
		if method == "" {
			method = http.MethodGet
		}
		status := c.Status
		if status == 0 {
			status = http.StatusOK
		}
		s.mu.Lock()
		s.responses[method+" "+u.RequestURI()] = cannedResponse{status: status, headers: c.Headers, body: body}
		s.mu.Unlock()
	}
	// A redirect to another canned origin must land on its server too.
	for _, s := range fx.servers {
		s.mu.Lock()
		s.rewrite = fx.toLoopback
		s.mu.Unlock()
	}
	return hosts, nil
}

// toLoopback replaces each fixture origin in s with its server's.
func (fx *fixture) toLoopback(s string) string {
	for from, to := range fx.origins {
		s = strings.ReplaceAll(s, from, to)
	}
	return s
}

// toOriginal replaces each server's origin in s with the fixture's, then
// each server's bare host:port with the fixture's host.
func (fx *fixture) toOriginal(s string) string {
	for from, to := range fx.origins {
		s = strings.ReplaceAll(s, to, from)
		u, _ := url.Parse(from)
		s = strings.ReplaceAll(s, strings.TrimPrefix(to, "http://"), u.Host)
	}
	return s
}

// unmatched lists the requests no canned response answered.
func (fx *fixture) unmatched() []string {
	var out []string
	for _, s := range fx.servers {
		s.mu.Lock()
		out = append(out, s.missed...)
		s.mu.Unlock()
	}
	for i, m := range out {
		out[i] = fx.toOriginal(m)
	}
	return out
}

func (fx *fixture) close(ctx context.Context) {
	if fx.host != nil {
		_ = fx.host.Close(ctx)
	}
	for _, s := range fx.servers {
		_ = s.srv.Close()
	}
	_ = os.RemoveAll(fx.dir)
}

// cannedServer answers the canned responses of one origin on loopback.
type cannedServer struct {
	addr      string
	srv       *http.Server
	responses map[string]cannedResponse // "METHOD /path?query"
	mu        sync.Mutex                // guards responses, rewrite and missed
	rewrite   func(string) string       // applied to a Location header
	missed    []string
}

type cannedResponse struct {
	status  int
	headers map[string]string
	body    []byte
}

func startCanned() (*cannedServer, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &cannedServer{addr: l.Addr().String(), responses: map[string]cannedResponse{}}
	s.srv = &http.Server{Handler: s}
	go func() { _ = s.srv.Serve(l) }()
	return s, nil
}

func (s *cannedServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Method + " " + r.URL.RequestURI()
	s.mu.Lock()
	c, ok := s.responses[key]
	if !ok && r.Method == http.MethodHead {
		c, ok = s.responses[http.MethodGet+" "+r.URL.RequestURI()]
	}
	rewrite := s.rewrite
	if !ok {
		s.missed = append(s.missed, r.Method+" http://"+s.addr+r.URL.RequestURI())
	}
	s.mu.Unlock()
	if !ok {
		http.Error(w, "no canned response for "+key, http.StatusNotFound)
		return
	}
	_, _ = io.Copy(io.Discard, r.Body)
	for k, v := range c.headers {
		if strings.EqualFold(k, "Location") && rewrite != nil {
			v = rewrite(v)
		}
		w.Header().Set(k, v)
	}
	if w.Header().Get("Content-Length") == "" {
		w.Header().Set("Content-Length", strconv.Itoa(len(c.body)))
	}
	w.WriteHeader(c.status)
	_, _ = w.Write(c.body)
}

// copyTool writes a copy of t's folder into dst in which t's manifest
// requests exactly hosts, and no other manifest is: the tool's files are
// hard links (copies across file systems), so its digest holds.
func copyTool(t *manifest.Tool, dst string, hosts []string) error {
	raw, err := os.ReadFile(t.Path)
	if err != nil {
		return err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return err
	}
	sc, _ := m["securityContext"].(map[string]any)
	if sc == nil {
		sc = map[string]any{}
		m["securityContext"] = sc
	}
	sc["networkAccess"] = map[string]any{"allowHosts": hosts}
	out, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	skip := func(rel string, d fs.DirEntry) bool {
		n := d.Name()
		return !d.IsDir() && (strings.HasSuffix(n, manifestSuffix) || strings.HasSuffix(n, ".workflow.json"))
	}
	if err := copyTree(t.Dir, dst, true, skip); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dst, filepath.Base(t.Path)), out, 0o644)
}

// manifestSuffix ends every tool manifest's name.
const manifestSuffix = ".tool.json"

// copyTree copies the folder src into dst (which must not exist): files
// as copies, or with link as hard links where it can; symbolic links are
// copied as links. skip leaves an entry out.
func copyTree(src, dst string, link bool, skip func(rel string, d fs.DirEntry) bool) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if skip != nil && rel != "." && skip(rel, d) {
			return nil
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case !d.Type().IsRegular():
			return nil
		}
		if link && os.Link(p, target) == nil {
			return nil
		}
		return copyFile(p, target)
	})
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fi.Mode().Perm())
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	return errors.Join(err, out.Close())
}

// rewriteStrings applies f to every string (values and object keys) of
// the JSON value raw.
func rewriteStrings(raw json.RawMessage, f func(string) string) (json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return raw, nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case string:
			return f(x)
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
		case map[string]any:
			out := make(map[string]any, len(x))
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				out[f(k)] = walk(x[k])
			}
			return out
		}
		return v
	}
	return json.Marshal(walk(v))
}
