package host_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/hosttest"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/host/runner/mcpclient"
	"github.com/agenthost/agenthost/host/runner/script"
	"github.com/agenthost/agenthost/host/wire"
)

// mcpTestServer builds the test MCP server (host/runner/mcpclient/
// testdata/server) into a folder of its own, readable by every user as an
// installed program's folder is, and returns the binary's path and the
// definitions it offers (to pin).
func mcpTestServer(t testing.TB) (string, []mcpclient.Definition) {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "server")
	build := exec.Command("go", "build", "-o", bin, "./host/runner/mcpclient/testdata/server")
	build.Dir = hosttest.Root(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the test MCP server: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "description.txt"), []byte("Echoes its text."), 0o644); err != nil {
		t.Fatal(err)
	}
	return bin, mcpDefinitions(t, bin)
}

// mcpDefinitions returns the tool definitions the test server offers when
// started with args.
func mcpDefinitions(t testing.TB, bin string, args ...string) []mcpclient.Definition {
	t.Helper()
	a, _ := json.Marshal(append([]string{}, args...))
	p := hosttest.Policy(t, "mcpServers:\n  demo:\n    command: "+bin+"\n    args: "+string(a)+"\n")
	h, err := host.New(context.Background(), host.Options{Policy: p, CacheDir: hosttest.CacheDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	defs, err := h.MCPDefinitions(context.Background(), "demo")
	if err != nil {
		t.Fatal(err)
	}
	return defs
}

// mcpHost writes policy doc to pdir/policy.yaml, pins defs as the tools
// of the server demo and returns a host over that policy, with protected
// as Options.Protected.
func mcpHost(t *testing.T, pdir, doc string, defs []mcpclient.Definition, protected ...string) *host.Host {
	t.Helper()
	pol := filepath.Join(pdir, "policy.yaml")
	if err := os.WriteFile(pol, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	lock, err := mcpclient.ReadLock(mcpclient.LockPath(pol))
	if err != nil {
		t.Fatal(err)
	}
	lock.Pin("demo", defs)
	if err := lock.Write(mcpclient.LockPath(pol)); err != nil {
		t.Fatal(err)
	}
	p, err := policy.Load(pol)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	h, err := host.New(ctx, host.Options{Policy: p, CacheDir: hosttest.CacheDir(t), Protected: protected})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(ctx) })
	return h
}

// privateFS reports whether a script (and a stdio MCP server) gets a
// file system of its own here, with per-call uids: a root host with
// Landlock and namespaces.
func privateFS() bool {
	on := map[string]bool{}
	for _, p := range script.Protections() {
		on[p.Name] = p.Available
	}
	return os.Geteuid() == 0 && on["private-filesystem"] && on["unprivileged-uid"]
}

// TestMCPServerFolder: a stdio server without cwd runs in an empty
// private folder, never in the policy's: it cannot read the policy (the
// other servers' secret headers), the lock file, or a key kept beside
// them. A cwd, command or file grant that would expose the policy's
// folder, or a protected file of the application (the auth file), is
// refused with an error naming it, and the server never starts.
func TestMCPServerFolder(t *testing.T) {
	bin, defs := mcpTestServer(t)
	secrets := []string{"policy.yaml", "policy.mcp-lock.json", "credential.key"}
	for _, tc := range []struct {
		name string
		// doc is the demo server's entry, after "mcpServers:\n  demo:\n".
		doc string
		// refused is a fragment of the error of every call; "" means the
		// server runs and must not see the secrets.
		refused string
	}{
		{name: "no cwd", doc: "    command: " + bin + "\n"},
		{name: "cwd is the policy's folder", doc: "    command: " + bin + "\n    cwd: .\n", refused: "policy.yaml"},
		{name: "cwd holds the policy's folder", doc: "    command: " + bin + "\n    cwd: ..\n", refused: "policy.yaml"},
		{name: "workspace grant over the policy's folder", doc: "    command: " + bin + "\n    securityContext: {fileAccess: {allowRead: [\"**\"]}}\n", refused: "policy.yaml"},
		{name: "command in the policy's folder", doc: "    command: ./server\n", refused: "policy.yaml"},
		{name: "cwd holds the auth file", doc: "    command: " + bin + "\n    cwd: ../auth\n", refused: "auth.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			pdir := filepath.Join(root, "etc")
			if err := os.Mkdir(pdir, 0o700); err != nil {
				t.Fatal(err)
			}
			// An application's file elsewhere (serve's auth file).
			auth := filepath.Join(root, "auth", "auth.yaml")
			if err := os.Mkdir(filepath.Dir(auth), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(auth, []byte("tenants: {}\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(pdir, "credential.key"), []byte("KEY-MATERIAL-0123456789abcdef"), 0o600); err != nil {
				t.Fatal(err)
			}
			doc := tc.doc
			if strings.Contains(doc, "./server") {
				b, err := os.ReadFile(bin)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(pdir, "server"), b, 0o755); err != nil {
					t.Fatal(err)
				}
				doc = strings.Replace(doc, "./server", filepath.Join(pdir, "server"), 1)
			}
			h := mcpHost(t, pdir, "limits: {default: {timeoutMs: 10000}}\nmcpServers:\n  other:\n    url: https://mcp.example.com/mcp\n    headers: {Authorization: \"Bearer SECRET-HEADER-VALUE\"}\n  demo:\n"+doc+
				"networkAccess: {allowHosts: [mcp.example.com]}\n", defs, auth)
			ctx := context.Background()
			env := h.Call(ctx, "mcp:demo.echo", json.RawMessage(`{"text":"hello"}`))
			if tc.refused != "" {
				if env.Error == nil || !strings.Contains(env.Error.Message, tc.refused) || !strings.Contains(env.Error.Message, "never") {
					t.Fatalf("the server started: %+v %s", env.Error, env.Output)
				}
				return
			}
			if env.Error != nil || string(env.Output) != `"hello"` {
				t.Fatalf("echo: %+v %s", env.Error, env.Output)
			}
			for _, name := range secrets {
				for _, path := range []string{name, filepath.Join(pdir, name)} {
					env := h.Call(ctx, "mcp:demo.readfile", json.RawMessage(`{"path":"`+path+`"}`))
					raw, _ := json.Marshal(env)
					if env.Error == nil || strings.Contains(string(raw), "SECRET-HEADER-VALUE") || strings.Contains(string(raw), "KEY-MATERIAL") {
						t.Errorf("the server read %s: %s", path, raw)
					}
				}
			}
		})
	}
}

// TestMCPServerNoIdmap: on a root host the server's process reaches the
// folders the operator did not grant (its program's folder, the system's
// runtime files) with their real owners, never idmapped to its uid: a
// root-only file beside the program stays unreadable. The folder the
// operator grants as its cwd is readable as before.
func TestMCPServerNoIdmap(t *testing.T) {
	if !privateFS() {
		t.Skip("needs a root host with a private file system for subprocesses")
	}
	bin, defs := mcpTestServer(t)
	secret := filepath.Join(filepath.Dir(bin), "secret.txt")
	if err := os.WriteFile(secret, []byte("ROOT-ONLY-VALUE"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		cwd      string
		readable bool
	}{
		{name: "program's folder, not granted", readable: false},
		{name: "program's folder granted as cwd", cwd: filepath.Dir(bin), readable: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := "limits: {default: {timeoutMs: 10000}}\nmcpServers:\n  demo:\n    command: " + bin + "\n"
			if tc.cwd != "" {
				doc += "    cwd: " + tc.cwd + "\n"
			}
			h := mcpHost(t, t.TempDir(), doc, defs)
			env := h.Call(context.Background(), "mcp:demo.readfile", json.RawMessage(`{"path":"`+secret+`"}`))
			raw, _ := json.Marshal(env)
			if got := env.Error == nil && strings.Contains(string(env.Output), "ROOT-ONLY-VALUE"); got != tc.readable {
				t.Fatalf("readable %v, want %v: %s", got, tc.readable, raw)
			}
		})
	}
}

// TestMCPImportWireCollision: a server offering a.b and a_b (one wire
// name) loads neither, with a load failure naming both; its other tools
// load and run, and the catalogue maps to wire names (what every agent
// run and the schema export do) without error.
func TestMCPImportWireCollision(t *testing.T) {
	bin, _ := mcpTestServer(t)
	defs := mcpDefinitions(t, bin, "--colliding")
	h := mcpHost(t, t.TempDir(), "mcpServers:\n  demo:\n    command: "+bin+"\n    args: [--colliding]\n", defs)
	var named int
	for _, f := range h.Failures() {
		if strings.Contains(f.Error(), "mcp:demo.a.b and mcp:demo.a_b") && strings.Contains(f.Error(), "mcp__demo_a_b") {
			named++
		}
	}
	if named != 2 {
		t.Fatalf("want a failure naming both for each of the two tools, got %v", h.Failures())
	}
	var ids []string
	for _, tl := range h.Tools(host.Query{}) {
		if tl.ToolID == "mcp:demo.a.b" || tl.ToolID == "mcp:demo.a_b" {
			t.Fatalf("%s loaded", tl.ToolID)
		}
		ids = append(ids, tl.ToolID)
	}
	if _, err := wire.NewTable(ids); err != nil {
		t.Fatalf("the catalogue's wire names: %v", err)
	}
	for _, id := range []string{"mcp:demo.a.b", "mcp:demo.a_b"} {
		if env := h.Call(context.Background(), id, nil); env.Error == nil {
			t.Fatalf("%s ran", id)
		}
	}
	if env := h.Call(context.Background(), "mcp:demo.echo", json.RawMessage(`{"text":"still"}`)); env.Error != nil || string(env.Output) != `"still"` {
		t.Fatalf("echo: %+v %s", env.Error, env.Output)
	}
}
