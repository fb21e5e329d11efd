package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/agenthost/agenthost/host/manifest"
)

type greetArgs struct {
	Name  string `json:"name" jsonschema:"who to greet"`
	Times int    `json:"times,omitempty" jsonschema:"how many times"`
	Style struct {
		Shout bool   `json:"shout,omitempty"`
		Mood  string `json:"mood,omitempty" enum:"warm,formal"`
	} `json:"style,omitempty"`
}

type greeting struct {
	Text string `json:"text"`
}

func greet(_ context.Context, a greetArgs) (greeting, error) {
	n := max(a.Times, 1)
	s := strings.Repeat("hello "+a.Name+" ", n)
	if a.Style.Shout {
		s = strings.ToUpper(s)
	}
	return greeting{Text: strings.TrimSpace(s)}, nil
}

// TestFunc_roundTrip pins a typed Go tool: schemas from the Go types
// (required vs omitempty, nested structs, descriptions from jsonschema
// tags), arguments validated like any tool's, output typed.
func TestFunc_roundTrip(t *testing.T) {
	h := hosttest.NewHost(t, nil)
	if err := h.Register(host.Func(host.FuncSpec{ID: "app:greet", Description: "Greets someone."}, greet)); err != nil {
		t.Fatal(err)
	}
	tl, err := h.Tool("app:greet")
	if err != nil {
		t.Fatal(err)
	}
	var params struct {
		Required   []string                   `json:"required"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(tl.Parameters, &params); err != nil {
		t.Fatal(err)
	}
	if strings.Join(params.Required, ",") != "name" || !strings.Contains(string(params.Properties["name"]), "who to greet") ||
		!strings.Contains(string(params.Properties["style"]), "shout") || !strings.Contains(string(params.Properties["style"]), `"enum":["warm","formal"]`) {
		t.Fatalf("derived schema %s", tl.Parameters)
	}
	ctx := context.Background()
	env := h.Call(ctx, "app:greet", json.RawMessage(`{"name":"Ada","times":2,"style":{"shout":true}}`))
	if env.Status != abi.StatusSuccess || string(env.Output) != `{"text":"HELLO ADA HELLO ADA"}` {
		t.Fatalf("%s %s %v", env.Status, env.Output, env.Error)
	}
	if env := h.Call(ctx, "app:greet", json.RawMessage(`{"times":"x"}`)); code(env) != abi.CodeInvalidArguments {
		t.Fatalf("bad arguments: %v", env.Error)
	}
	if env := h.Call(ctx, "app:greet", json.RawMessage(`{"name":"x","style":{"mood":"angry"}}`)); code(env) != abi.CodeInvalidArguments {
		t.Fatalf("a value outside the enum: %v", env.Error)
	}
	// From an ACTION block every leaf is a string: coerced by the schema.
	turn := h.Exec(ctx, `<ACTION><app:greet><name>Bo</name><times>2</times></app:greet></ACTION>`)
	if turn.Status != abi.StatusSuccess || !strings.Contains(turn.Observation, "hello Bo hello Bo") {
		t.Fatalf("exec: %s", turn.Observation)
	}
}

// TestFunc_failures pins how a Go tool fails: its error (an *abi.Error
// keeps its code), a panic (TOOL_ERROR with the stack in the logs, and the
// host serves on), its timeout, and a duplicate registration.
func TestFunc_failures(t *testing.T) {
	h := hosttest.NewHost(t, nil)
	type none struct{}
	tools := []host.Tool{
		host.Func(host.FuncSpec{ID: "app:fail", Description: "Fails."}, func(context.Context, none) (none, error) { return none{}, errors.New("no luck") }),
		host.Func(host.FuncSpec{ID: "app:notfound", Description: "Fails with a code."}, func(context.Context, none) (none, error) {
			return none{}, abi.Errorf(abi.CodeInvalidArguments, "no such row")
		}),
		host.Func(host.FuncSpec{ID: "app:panic", Description: "Panics."}, func(context.Context, none) (none, error) { panic("boom") }),
		host.Func(host.FuncSpec{ID: "app:slow", Description: "Waits for its context.", SecurityContext: &manifest.SecurityContext{Limits: &manifest.Limits{TimeoutMs: 50}}}, func(ctx context.Context, _ none) (none, error) {
			<-ctx.Done()
			return none{}, ctx.Err()
		}),
	}
	for _, tl := range tools {
		if err := h.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	for id, want := range map[string]abi.Code{"app:fail": abi.CodeToolError, "app:notfound": abi.CodeInvalidArguments, "app:panic": abi.CodeToolError, "app:slow": abi.CodeTimeout} {
		env := h.Call(ctx, id, nil)
		if code(env) != want {
			t.Errorf("%s: %v, want %s", id, env.Error, want)
		}
		if id == "app:panic" && !strings.Contains(strings.Join(env.Logs, "\n"), "goroutine") {
			t.Errorf("the panic's stack is not in the logs: %q", env.Logs)
		}
	}
	if err := h.Register(tools[0]); err == nil || !strings.Contains(err.Error(), "duplicate") {
		t.Fatalf("a second registration: %v", err)
	}
	if err := h.Unregister("app:fail"); err != nil {
		t.Fatal(err)
	}
	if env := h.Call(ctx, "app:fail", nil); code(env) != abi.CodeUnknownTool {
		t.Fatalf("after Unregister: %v", env.Error)
	}
}

// TestFunc_grant pins that a Go tool gets only its grant: FS reads granted
// files, lists only what it may see, and refuses the rest (the call is then
// PERMISSION_DENIED); WriteFile needs a write grant.
func TestFunc_grant(t *testing.T) {
	ws := t.TempDir()
	for name, body := range map[string]string{"data/a.txt": "A", "secret.txt": "S", ".env": "K=1"} {
		p := filepath.Join(ws, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	type pathArg struct {
		Path string `json:"path"`
	}
	read := host.Func(host.FuncSpec{ID: "app:read", Description: "Reads a workspace file.", SecurityContext: &manifest.SecurityContext{FileAccess: &manifest.FileAccess{AllowRead: []string{"**"}, AllowWrite: []string{"out/**"}}}}, func(ctx context.Context, a pathArg) (string, error) {
		b, err := fs.ReadFile(host.FS(ctx), a.Path)
		return string(b), err
	})
	list := host.Func(host.FuncSpec{ID: "app:list", Description: "Lists the workspace.", SecurityContext: &manifest.SecurityContext{FileAccess: &manifest.FileAccess{AllowRead: []string{"**"}}}}, func(ctx context.Context, _ struct{}) ([]string, error) {
		var names []string
		err := fs.WalkDir(host.FS(ctx), ".", func(p string, d fs.DirEntry, err error) error {
			if err == nil && p != "." {
				names = append(names, p)
			}
			return err
		})
		return names, err
	})
	write := host.Func(host.FuncSpec{ID: "app:write", Description: "Writes a file.", SecurityContext: &manifest.SecurityContext{FileAccess: &manifest.FileAccess{AllowWrite: []string{"out/**"}}}}, func(ctx context.Context, a pathArg) (bool, error) {
		return true, host.WriteFile(ctx, a.Path, []byte("w"), 0o644)
	})
	h := hosttest.NewHost(t, hosttest.Policy(t, "workspace: "+ws+"\nfileAccess: {allowRead: [\"data/**\"], allowWrite: [\"out/**\"]}"))
	for _, tl := range []host.Tool{read, list, write} {
		if err := h.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(ws, "out"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if env := h.Call(ctx, "app:read", json.RawMessage(`{"path":"data/a.txt"}`)); string(env.Output) != `"A"` {
		t.Fatalf("granted read: %s %v", env.Output, env.Error)
	}
	for _, p := range []string{"secret.txt", ".env", "../etc/passwd", "/etc/passwd"} {
		if env := h.Call(ctx, "app:read", json.RawMessage(`{"path":"`+p+`"}`)); code(env) != abi.CodePermissionDenied && !(strings.HasPrefix(p, "/") || strings.HasPrefix(p, "..")) {
			t.Errorf("read %s: %v", p, env.Error)
		} else if env.Status == abi.StatusSuccess {
			t.Errorf("read %s succeeded: %s", p, env.Output)
		}
	}
	if env := h.Call(ctx, "app:list", nil); string(env.Output) != `["data","data/a.txt"]` {
		t.Fatalf("listing: %s %v", env.Output, env.Error)
	}
	if env := h.Call(ctx, "app:write", json.RawMessage(`{"path":"out/x.txt"}`)); env.Status != abi.StatusSuccess {
		t.Fatalf("granted write: %v", env.Error)
	}
	if env := h.Call(ctx, "app:write", json.RawMessage(`{"path":"data/a.txt"}`)); code(env) != abi.CodePermissionDenied {
		t.Fatalf("write outside the grant: %v", env.Error)
	}
}

// TestServiceMethodBinds pins that a manifest with handler service-method
// runs the Go function registered under its service and method (it listed
// fine and failed every call), and that an unregistered one is a load
// error listing the registered services.
func TestServiceMethodBinds(t *testing.T) {
	dir := t.TempDir()
	m := `{"toolId":"crm:lookup","displayName":"Lookup","description":"Looks a customer up.","version":"2.0.0",
	"handler":{"type":"service-method","serviceName":"crm","methodName":"Lookup"},
	"parameters":{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]}}`
	if err := os.WriteFile(filepath.Join(dir, "lookup.tool.json"), []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
	type idArg struct {
		ID int `json:"id"`
	}
	fn := host.Func(host.FuncSpec{ID: "crm:lookup-impl", Description: "Implements crm.Lookup.", Service: "crm", Method: "Lookup"}, func(_ context.Context, a idArg) (map[string]any, error) {
		return map[string]any{"id": a.ID, "name": "Ada"}, nil
	})
	ctx := context.Background()
	h, err := host.New(ctx, host.Options{Dirs: []string{dir}, Tools: []host.Tool{fn}, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	if env := h.Call(ctx, "crm:lookup", json.RawMessage(`{"id":"7"}`)); env.Status != abi.StatusSuccess || string(env.Output) != `{"id":7,"name":"Ada"}` {
		t.Fatalf("%s %v", env.Output, env.Error)
	}
	bare, err := host.New(ctx, host.Options{Dirs: []string{dir}, Tools: []host.Tool{host.Func(host.FuncSpec{ID: "other:x", Description: "X."}, greet)}, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer bare.Close(ctx)
	env := bare.Call(ctx, "crm:lookup", json.RawMessage(`{"id":1}`))
	if code(env) != abi.CodeLoadError || !strings.Contains(env.Error.Message, "registered: other.x") {
		t.Fatalf("unregistered service: %v", env.Error)
	}
}

// TestFunc_uiIdempotentAsync pins the three manifest fields a Go tool can
// set: ui (display hints, kept by the agent loop as ui_hints), idempotent
// (MCP's idempotentHint), and async (the HTTP API answers with a job);
// it has a jobs API.
func TestFunc_uiIdempotentAsync(t *testing.T) {
	type none struct{}
	rows := host.Func(host.FuncSpec{ID: "app:rows", Description: "Rows.", UI: map[string]string{"kind": "table", "rows": "/items", "columns": "/cols"}, Idempotent: true}, func(context.Context, none) (map[string]any, error) {
		return map[string]any{"items": []any{map[string]any{"a": 1}}}, nil
	})
	h := hosttest.NewHost(t, nil)
	if err := h.Register(rows); err != nil {
		t.Fatal(err)
	}
	tl, _ := h.Tool("app:rows")
	if !tl.Idempotent || tl.UI["kind"] != "table" {
		t.Fatalf("manifest %+v", tl)
	}
	async := host.Func(host.FuncSpec{ID: "app:later", Description: "Later.", Async: true}, func(context.Context, none) (none, error) { return none{}, nil })
	if err := h.Register(async); err != nil {
		t.Fatalf("an async tool: %v", err)
	}
	if tl, err := h.Tool("app:later"); err != nil || !tl.Async {
		t.Fatalf("async not kept: %+v %v", tl, err)
	}
	bad := host.Func(host.FuncSpec{ID: "app:badui", Description: "Bad UI.", UI: map[string]string{"kind": "hologram"}}, func(context.Context, none) (none, error) { return none{}, nil })
	if err := h.Register(bad); err == nil {
		t.Fatal("an unknown ui kind registered")
	}
}

// TestFuncSpec_invalid pins that a spec that does not make a valid
// manifest is refused at registration with the tool named, never
// registered half-way.
func TestFuncSpec_invalid(t *testing.T) {
	tests := []struct {
		name string
		spec host.FuncSpec
		want string
	}{
		{"no ID", host.FuncSpec{Description: "Greets."}, "funcspec.id is empty"},
		{"no description", host.FuncSpec{ID: "app:greet"}, "description"},
		{"bad version", host.FuncSpec{ID: "app:greet", Description: "Greets.", Version: "one"}, "version"},
		{"example that does not validate", host.FuncSpec{ID: "app:greet", Description: "Greets.",
			Examples: []manifest.Example{{Description: "no name", Input: json.RawMessage(`{"name":7}`)}}}, "example"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := hosttest.NewHost(t, nil)
			err := h.Register(host.Func(tc.spec, greet))
			if err == nil || !strings.Contains(strings.ToLower(err.Error()), tc.want) {
				t.Fatalf("got %v, want an error naming %q", err, tc.want)
			}
			if _, err := h.Tool("app:greet"); err == nil {
				t.Fatal("the tool was registered")
			}
		})
	}
}
