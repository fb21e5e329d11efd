package policy_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/policy"
)

// parse parses a YAML policy as if read from <tmp>/policy.yaml.
func parse(t *testing.T, doc string) *policy.Policy {
	t.Helper()
	p, err := policy.Parse([]byte(doc), filepath.Join(t.TempDir(), "policy.yaml"))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return p
}

func tool(id string, sc *manifest.SecurityContext) *manifest.Tool {
	return &manifest.Tool{ToolID: id, Version: "1.0.0", Handler: manifest.Handler{Type: manifest.HandlerWasm}, SecurityContext: sc, Dir: "/toolpacks/x"}
}

func noEnv(string) (string, bool) { return "", false }

func rules(rs []policy.PathRule) []string {
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.String())
	}
	return out
}

func denials(ds []policy.Denial) []string {
	out := make([]string, 0, len(ds))
	for _, d := range ds {
		out = append(out, d.Capability+" "+d.Requested+": "+d.Reason)
	}
	return out
}

// wantDenials checks that each want is a prefix of exactly one denial, in
// order, and that there are no others.
func wantDenials(t *testing.T, got []policy.Denial, want ...string) {
	t.Helper()
	g := denials(got)
	if len(g) != len(want) {
		t.Fatalf("denials = %q, want %d starting with %q", g, len(want), want)
	}
	for i := range want {
		if !strings.HasPrefix(g[i], want[i]) {
			t.Fatalf("denial %d = %q, want prefix %q (all: %q)", i, g[i], want[i], g)
		}
	}
}

func TestGrant_files(t *testing.T) {
	tests := []struct {
		name        string
		policy      string
		read, write []string
		wantRead    []string
		wantWrite   []string
		wantDenials []string
	}{
		{
			name:     "request under ceiling",
			policy:   `fileAccess: {allowRead: ["**"]}`,
			read:     []string{"data/**"},
			wantRead: []string{"$TOOL/**", "$TMP/**", "data/**"},
		},
		{
			name:        "request narrowed",
			policy:      `fileAccess: {allowRead: ["data/**"]}`,
			read:        []string{"**"},
			wantRead:    []string{"$TOOL/**", "$TMP/**", "data/**"},
			wantDenials: []string{"fileAccess.allowRead **: narrowed to data/**"},
		},
		{
			name:        "request narrowed to two ceilings",
			policy:      `fileAccess: {allowRead: ["data/**", "docs/*.md"]}`,
			read:        []string{"**/*.md"},
			wantRead:    []string{"$TOOL/**", "$TMP/**", "data/**/*.md", "docs/*.md"},
			wantDenials: []string{"fileAccess.allowRead **/*.md: narrowed to data/**/*.md, docs/*.md"},
		},
		{
			name:        "no overlap",
			policy:      `fileAccess: {allowRead: ["data/**"]}`,
			read:        []string{"secret/**", "*.txt"},
			wantRead:    []string{"$TOOL/**", "$TMP/**"},
			wantDenials: []string{"fileAccess.allowRead secret/**: outside", "fileAccess.allowRead *.txt: outside"},
		},
		{
			name:        "default policy: no workspace writes",
			policy:      ``,
			write:       []string{"out/**", "$TMP/**"},
			wantWrite:   []string{"$TMP/**"},
			wantDenials: []string{"fileAccess.allowWrite out/**: outside the policy's fileAccess.allowWrite"},
		},
		{
			name:      "write granted",
			policy:    `fileAccess: {allowWrite: ["out/**"]}`,
			write:     []string{"out/reports/**"},
			wantWrite: []string{"$TMP/**", "out/reports/**"},
		},
		{
			name:        "tool folder never writable",
			policy:      `fileAccess: {allowWrite: ["**"]}`,
			read:        []string{"$TOOL/**"},
			write:       []string{"$TOOL/x"},
			wantRead:    []string{"$TOOL/**", "$TMP/**"},
			wantWrite:   []string{"$TMP/**"},
			wantDenials: []string{"fileAccess.allowWrite $TOOL/x: the tool folder ($TOOL) is never writable"},
		},
		{
			name:      "cache on request",
			policy:    `cacheDir: /var/cache/ah`,
			read:      []string{"$CACHE/**"},
			write:     []string{"$CACHE/models/**"},
			wantRead:  []string{"$TOOL/**", "$TMP/**", "$CACHE/**"},
			wantWrite: []string{"$TMP/**", "$CACHE/models/**"},
		},
		{
			name:      "duplicates pruned",
			policy:    `fileAccess: {allowRead: ["**"]}`,
			read:      []string{"data/**", "data/x/**", "data/**"},
			wantRead:  []string{"$TOOL/**", "$TMP/**", "data/**"},
			wantWrite: []string{"$TMP/**"},
		},
		{
			name:   "escapes denied",
			policy: `fileAccess: {allowRead: ["**"], allowWrite: ["**"]}`,
			read:   []string{"../secret", "/etc/passwd", "data/../../x", "$HOME/.ssh/**", "data\\..\\x", "./x"},
			write:  []string{"$TOOL/../../etc/**"},
			wantDenials: []string{
				"fileAccess.allowRead ../secret: invalid path",
				"fileAccess.allowRead /etc/passwd: invalid path",
				"fileAccess.allowRead data/../../x: invalid path",
				"fileAccess.allowRead $HOME/.ssh/**: invalid path",
				"fileAccess.allowRead data\\..\\x: invalid path",
				"fileAccess.allowRead ./x: invalid path",
				"fileAccess.allowWrite $TOOL/../../etc/**: invalid path",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := parse(t, tc.policy)
			g := p.Grant(tool("t:x", &manifest.SecurityContext{FileAccess: &manifest.FileAccess{AllowRead: tc.read, AllowWrite: tc.write}}), noEnv)
			if tc.wantRead == nil {
				tc.wantRead = []string{"$TOOL/**", "$TMP/**"}
			}
			if tc.wantWrite == nil {
				tc.wantWrite = []string{"$TMP/**"}
			}
			if got := rules(g.Read); !slices.Equal(got, tc.wantRead) {
				t.Errorf("Read = %q, want %q", got, tc.wantRead)
			}
			if got := rules(g.Write); !slices.Equal(got, tc.wantWrite) {
				t.Errorf("Write = %q, want %q", got, tc.wantWrite)
			}
			wantDenials(t, g.Denials, tc.wantDenials...)
		})
	}
}

func TestGrant_noCacheDir(t *testing.T) {
	p := &policy.Policy{}
	g := p.Grant(tool("t:x", &manifest.SecurityContext{FileAccess: &manifest.FileAccess{AllowRead: []string{"$CACHE/**"}}}), noEnv)
	if g.CacheDir != "" {
		t.Fatalf("CacheDir = %q, want empty", g.CacheDir)
	}
	wantDenials(t, g.Denials, "fileAccess.allowRead $CACHE/**: no cache folder")
}

func TestGrant_allows(t *testing.T) {
	p := parse(t, `
cacheDir: /var/cache/ah
fileAccess: {allowRead: ["data/**", "docs/*.md"], allowWrite: ["out/**"]}`)
	g := p.Grant(tool("t:x", &manifest.SecurityContext{FileAccess: &manifest.FileAccess{
		AllowRead:  []string{"**", "$CACHE/**"},
		AllowWrite: []string{"out/*.json", "$TMP/**", "$CACHE/**"},
	}}), noEnv)
	type access struct {
		root  policy.Root
		rel   string
		write bool
	}
	ws, tl, tmp, cache := policy.RootWorkspace, policy.RootTool, policy.RootTmp, policy.RootCache
	allowed := []access{
		{ws, "data", false}, {ws, "data/a.csv", false}, {ws, "data/x/y/z", false}, {ws, "docs/a.md", false},
		{ws, "out/r.json", true},
		{tl, "", false}, {tl, ".", false}, {tl, "module.wasm", false}, {tl, "a/b", false},
		{tmp, "x", false}, {tmp, "x", true}, {tmp, "a/b/c", true},
		{cache, "m.bin", false}, {cache, "m.bin", true},
	}
	denied := []access{
		{ws, "", false}, {ws, "secret.txt", false}, {ws, "docs/a.txt", false}, {ws, "docs/x/a.md", false},
		{ws, "data/a.csv", true}, {ws, "out/r.txt", true}, {ws, "out/sub/r.json", true}, {ws, "out/r.json", false},
		{ws, "data/../secret.txt", false}, {ws, "../secret.txt", false}, {ws, "/etc/passwd", false},
		{ws, "data//a", false}, {ws, "data/./a", false}, {ws, "data/a\x00", false}, {ws, "..", false},
		{tl, "module.wasm", true}, {tl, "../x", false},
		{tmp, "../x", true}, {cache, "../../etc/passwd", false},
		{policy.Root("home"), "x", false},
	}
	for _, a := range allowed {
		if !g.Allows(a.root, a.rel, a.write) {
			t.Errorf("Allows(%s, %q, write=%v) = false, want true", a.root, a.rel, a.write)
		}
	}
	for _, a := range denied {
		if g.Allows(a.root, a.rel, a.write) {
			t.Errorf("Allows(%s, %q, write=%v) = true, want false", a.root, a.rel, a.write)
		}
	}
	canList := []string{"", ".", "data", "data/sub", "docs", "out"}
	cannot := []string{"secret", "docs/sub", "out/sub", "../", "..", "/"}
	for _, d := range canList {
		if !g.CanList(ws, d) {
			t.Errorf("CanList(workspace, %q) = false, want true", d)
		}
	}
	for _, d := range cannot {
		if g.CanList(ws, d) {
			t.Errorf("CanList(workspace, %q) = true, want false", d)
		}
	}
	if !g.CanList(tl, "") || !g.CanList(tmp, "x") {
		t.Errorf("CanList of $TOOL or $TMP = false, want true")
	}
	g.Denied = true
	if g.Allows(tmp, "x", false) || g.CanList(tl, "") {
		t.Errorf("a denied grant allows access")
	}
}

func TestGrant_mounts(t *testing.T) {
	p := parse(t, `fileAccess: {allowRead: ["data/**", "docs/**"], allowWrite: ["out/**"]}`)
	g := p.Grant(tool("t:x", &manifest.SecurityContext{FileAccess: &manifest.FileAccess{
		AllowRead:  []string{"data/**"},
		AllowWrite: []string{"out/**"},
		Mounts: map[string]string{
			"/mnt":        "data",
			"/out":        "./out",
			"/mnt/inner":  "data/x",
			"/docs":       "docs",
			"/tmp/x":      "data",
			"/workspace2": "data",
			"/escape":     "../etc",
			"/abs":        "/etc",
			"relative":    "data",
			"/dirty/../x": "data",
			"/":           "data",
		},
	}}), noEnv)
	want := []policy.Mount{{GuestPath: "/mnt", Folder: "data"}, {GuestPath: "/out", Folder: "out"}, {GuestPath: "/workspace2", Folder: "data"}}
	if !slices.Equal(g.Mounts, want) {
		t.Errorf("Mounts = %+v, want %+v", g.Mounts, want)
	}
	wantDenials(t, g.Denials,
		"fileAccess.mounts / -> data: the guest path must be",
		"fileAccess.mounts /abs -> /etc: the folder must be",
		"fileAccess.mounts /dirty/../x -> data: the guest path must be",
		"fileAccess.mounts /docs -> docs: no granted read or write rule",
		"fileAccess.mounts /escape -> ../etc: the folder must be",
		"fileAccess.mounts /mnt/inner -> data/x: overlaps another mount",
		"fileAccess.mounts /tmp/x -> data: the guest path is inside the reserved /tmp",
		"fileAccess.mounts relative -> data: the guest path must be",
	)
}

func TestGrant_network(t *testing.T) {
	tests := []struct {
		name        string
		policy      string
		request     []string
		wantHosts   []string
		wantPrivate bool
		wantDenials []string
	}{
		{
			name:        "default policy: no network",
			request:     []string{"api.example.com"},
			wantDenials: []string{"networkAccess.allowHosts api.example.com: not covered by the policy's networkAccess.allowHosts"},
		},
		{
			name:      "exact under wildcard",
			policy:    `networkAccess: {allowHosts: ["*.example.com"]}`,
			request:   []string{"api.example.com", "https://a.b.example.com"},
			wantHosts: []string{"api.example.com", "https://a.b.example.com"},
		},
		{
			name:        "wildcard does not cover the bare domain",
			policy:      `networkAccess: {allowHosts: ["*.example.com"]}`,
			request:     []string{"example.com", "evil.com", "127.0.0.1"},
			wantDenials: []string{"networkAccess.allowHosts example.com: not covered", "networkAccess.allowHosts evil.com: not covered", "networkAccess.allowHosts 127.0.0.1: not covered"},
		},
		{
			name:        "scheme narrowed",
			policy:      `networkAccess: {allowHosts: ["https://api.example.com"]}`,
			request:     []string{"api.example.com"},
			wantHosts:   []string{"https://api.example.com"},
			wantDenials: []string{"networkAccess.allowHosts api.example.com: narrowed to https://api.example.com"},
		},
		{
			name:        "wildcard request narrowed to listed hosts",
			policy:      `networkAccess: {allowHosts: ["a.example.com", "b.example.com:8443"]}`,
			request:     []string{"*.example.com"},
			wantHosts:   []string{"a.example.com", "b.example.com:8443"},
			wantDenials: []string{"networkAccess.allowHosts *.example.com: narrowed to a.example.com, b.example.com:8443"},
		},
		{
			name:        "port mismatch",
			policy:      `networkAccess: {allowHosts: ["https://api.example.com"]}`,
			request:     []string{"https://api.example.com:8443", "http://api.example.com"},
			wantDenials: []string{"networkAccess.allowHosts https://api.example.com:8443: not covered", "networkAccess.allowHosts http://api.example.com: not covered"},
		},
		{
			name:        "private addresses only with hosts",
			policy:      `networkAccess: {allowHosts: ["127.0.0.1"], allowPrivateAddresses: true}`,
			request:     []string{"127.0.0.1", "localhost", "bad host"},
			wantHosts:   []string{"127.0.0.1"},
			wantPrivate: true,
			wantDenials: []string{"networkAccess.allowHosts localhost: not covered", "networkAccess.allowHosts bad host: invalid host"},
		},
		{
			name:      "any host ceiling",
			policy:    `networkAccess: {allowHosts: ["*"]}`,
			request:   []string{"*.wikipedia.org", "api.example.com", "api.example.com"},
			wantHosts: []string{"*.wikipedia.org", "api.example.com"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := parse(t, tc.policy)
			g := p.Grant(tool("t:x", &manifest.SecurityContext{NetworkAccess: &manifest.NetworkAccess{AllowHosts: tc.request}}), noEnv)
			var got []string
			for _, h := range g.Hosts {
				got = append(got, h.String())
			}
			if !slices.Equal(got, tc.wantHosts) {
				t.Errorf("Hosts = %q, want %q", got, tc.wantHosts)
			}
			if g.AllowPrivate != tc.wantPrivate {
				t.Errorf("AllowPrivate = %v, want %v", g.AllowPrivate, tc.wantPrivate)
			}
			wantDenials(t, g.Denials, tc.wantDenials...)
			for _, h := range g.Hosts {
				port := h.Port
				scheme := h.Scheme
				if scheme == "" {
					scheme = "https"
				}
				host := strings.Replace(h.Host, "*", "sub", 1)
				if !g.AllowsHost(scheme, host, port) {
					t.Errorf("granted %s but AllowsHost(%q, %q, %d) = false", h, scheme, host, port)
				}
			}
		})
	}
}

func TestGrant_env(t *testing.T) {
	p := parse(t, `env: [LANG, API_TOKEN, TZ]`)
	lookup := func(k string) (string, bool) {
		v, ok := map[string]string{"LANG": "C.UTF-8", "API_TOKEN": "s3cret", "HOME": "/root", "PATH": "/bin"}[k]
		return v, ok
	}
	g := p.Grant(tool("t:x", &manifest.SecurityContext{Env: []string{"TZ", "LANG", "HOME", "API_TOKEN", "PATH", "LANG", "BAD-NAME"}}), lookup)
	if want := []string{"API_TOKEN", "LANG", "TZ"}; !slices.Equal(g.EnvNames, want) {
		t.Errorf("EnvNames = %q, want %q", g.EnvNames, want)
	}
	if len(g.Env) != 2 || g.Env["LANG"] != "C.UTF-8" || g.Env["API_TOKEN"] != "s3cret" {
		t.Errorf("Env = %v, want LANG and API_TOKEN only (TZ is unset)", g.Env)
	}
	wantDenials(t, g.Denials, "env HOME: not listed in the policy's env", "env PATH: not listed", "env BAD-NAME: not an environment variable name")

	// Nothing requested: nothing granted, whatever the policy lists.
	g = p.Grant(tool("t:y", nil), lookup)
	if len(g.Env) != 0 || len(g.EnvNames) != 0 {
		t.Errorf("unrequested env granted: %v %v", g.EnvNames, g.Env)
	}
}

func TestGrant_limits(t *testing.T) {
	tests := []struct {
		name        string
		policy      string
		req         *manifest.Limits
		want        policy.Limits
		wantDenials []string
	}{
		{
			name: "defaults",
			want: policy.Limits{Timeout: 10 * time.Second, MemoryBytes: 256 << 20, MaxOutputBytes: 1 << 20},
		},
		{
			name: "request within max",
			req:  &manifest.Limits{TimeoutMs: 5000, MemoryMb: 64, MaxOutputBytes: 4096, Fuel: 1e8, Deterministic: true},
			want: policy.Limits{Timeout: 5 * time.Second, MemoryBytes: 64 << 20, MaxOutputBytes: 4096, Fuel: 1e8, Deterministic: true},
		},
		{
			name: "request above max is clamped",
			req:  &manifest.Limits{TimeoutMs: 3_600_000, MemoryMb: 8192, MaxOutputBytes: 1 << 30},
			want: policy.Limits{Timeout: 60 * time.Second, MemoryBytes: 1024 << 20, MaxOutputBytes: 16 << 20},
			wantDenials: []string{
				"limits.timeoutMs 3600000: above the policy maximum 60000",
				"limits.memoryMb 8192: above the policy maximum 1024",
				"limits.maxOutputBytes 1073741824: above the policy maximum 16777216",
			},
		},
		{
			name:   "fuel ceiling applies when nothing is requested",
			policy: `limits: {max: {fuel: 1000000}}`,
			want:   policy.Limits{Timeout: 10 * time.Second, MemoryBytes: 256 << 20, MaxOutputBytes: 1 << 20, Fuel: 1e6},
		},
		{
			name:        "fuel request above ceiling",
			policy:      `limits: {default: {fuel: 5000}, max: {fuel: 1000000}}`,
			req:         &manifest.Limits{Fuel: 1e9},
			want:        policy.Limits{Timeout: 10 * time.Second, MemoryBytes: 256 << 20, MaxOutputBytes: 1 << 20, Fuel: 1e6},
			wantDenials: []string{"limits.fuel 1000000000: above the policy maximum 1000000"},
		},
		{
			name:   "policy defaults",
			policy: `limits: {default: {timeoutMs: 2000, fuel: 5000, deterministic: true}}`,
			want:   policy.Limits{Timeout: 2 * time.Second, MemoryBytes: 256 << 20, MaxOutputBytes: 1 << 20, Fuel: 5000, Deterministic: true},
		},
		{
			name: "per-tool tighter max and default",
			policy: `
tools:
  "t:x": {limits: {default: {timeoutMs: 1000}, max: {timeoutMs: 3000, memoryMb: 32, fuel: 10}}}`,
			req:         &manifest.Limits{TimeoutMs: 5000},
			want:        policy.Limits{Timeout: 3 * time.Second, MemoryBytes: 32 << 20, MaxOutputBytes: 1 << 20, Fuel: 10},
			wantDenials: []string{"limits.timeoutMs 5000: above the policy maximum 3000"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := parse(t, tc.policy)
			g := p.Grant(tool("t:x", &manifest.SecurityContext{Limits: tc.req}), noEnv)
			if g.Limits != tc.want {
				t.Errorf("Limits = %+v, want %+v", g.Limits, tc.want)
			}
			wantDenials(t, g.Denials, tc.wantDenials...)
		})
	}
}

func TestGrant_toolOverrides(t *testing.T) {
	p := parse(t, `
workspace: ./work
cacheDir: ./cache
fileAccess: {allowRead: ["**"], allowWrite: []}
networkAccess: {allowHosts: []}
env: [LANG]
isolation: {allowDegraded: true}
tools:
  "core:echo": {deny: true}
  "web:fetch":
    networkAccess: {allowHosts: ["api.example.com"], allowPrivateAddresses: true}
    config: {key: "from-policy", extra: "x"}
  "fs:write":
    fileAccess: {allowWrite: ["out/**"]}
    env: []
`)
	dir := filepath.Dir(p.Source())
	sc := &manifest.SecurityContext{
		FileAccess:    &manifest.FileAccess{AllowRead: []string{"data/**"}, AllowWrite: []string{"out/**"}},
		NetworkAccess: &manifest.NetworkAccess{AllowHosts: []string{"api.example.com"}},
		Env:           []string{"LANG"},
	}
	lookup := func(string) (string, bool) { return "v", true }

	echo := p.Grant(tool("core:echo", sc), lookup)
	if !echo.Denied || len(echo.Read) != 0 || len(echo.Write) != 0 || len(echo.Hosts) != 0 || len(echo.Env) != 0 {
		t.Errorf("core:echo grant = %+v, want denied with nothing", echo)
	}
	wantDenials(t, echo.Denials, "tool core:echo: the policy denies this tool")
	if echo.Allows(policy.RootTmp, "x", false) {
		t.Errorf("denied tool may read $TMP")
	}

	ft := tool("web:fetch", sc)
	ft.Handler.Config = map[string]string{"key": "from-manifest", "other": "y"}
	fetch := p.Grant(ft, lookup)
	if got := fetch.Hosts; len(got) != 1 || got[0].String() != "api.example.com" || !fetch.AllowPrivate {
		t.Errorf("web:fetch hosts = %v private %v, want api.example.com with private addresses", got, fetch.AllowPrivate)
	}
	if want := map[string]string{"key": "from-policy", "other": "y", "extra": "x"}; len(fetch.Config) != 3 || fetch.Config["key"] != want["key"] || fetch.Config["other"] != want["other"] || fetch.Config["extra"] != want["extra"] {
		t.Errorf("Config = %v, want %v", fetch.Config, want)
	}
	wantDenials(t, fetch.Denials, "fileAccess.allowWrite out/**: outside the policy's fileAccess.allowWrite")
	if !fetch.AllowDegraded {
		t.Errorf("AllowDegraded = false, want true")
	}
	if fetch.Workspace != filepath.Join(dir, "work") {
		t.Errorf("Workspace = %q, want %q", fetch.Workspace, filepath.Join(dir, "work"))
	}
	if want := filepath.Join(dir, "cache", "tools", "web", "fetch"); filepath.Dir(fetch.CacheDir) != want || !strings.HasPrefix(filepath.Base(fetch.CacheDir), "ws-") {
		t.Errorf("CacheDir = %q, want %q", fetch.CacheDir, want)
	}
	if fetch.ToolDir != "/toolpacks/x" {
		t.Errorf("ToolDir = %q", fetch.ToolDir)
	}

	write := p.Grant(tool("fs:write", sc), lookup)
	if got := rules(write.Write); !slices.Equal(got, []string{"$TMP/**", "out/**"}) {
		t.Errorf("fs:write Write = %q", got)
	}
	if got := rules(write.Read); !slices.Equal(got, []string{"$TOOL/**", "$TMP/**", "data/**"}) {
		t.Errorf("fs:write Read = %q (reads inherit the policy-wide ceiling)", got)
	}
	wantDenials(t, write.Denials,
		"networkAccess.allowHosts api.example.com: not covered by the policy's networkAccess.allowHosts",
		"env LANG: not listed in the policy's tools.fs:write.env")

	other := p.Grant(tool("other:tool", sc), lookup)
	wantDenials(t, other.Denials,
		"fileAccess.allowWrite out/**: outside",
		"networkAccess.allowHosts api.example.com: not covered by the policy's networkAccess.allowHosts")
	if other.Env["LANG"] != "v" {
		t.Errorf("other:tool Env = %v", other.Env)
	}
}

func TestGrant_cacheDirSanitised(t *testing.T) {
	p := &policy.Policy{CacheDir: "/c"}
	tests := map[string]string{
		"core:echo":     "/c/tools/core/echo",
		"a.b:c-d_e":     "/c/tools/a.b/c-d_e",
		"Bad/../x:y":    "/c/tools/_ad_.._x/y",
		"noColon":       "/c/tools/_/no_olon",
		"ns:..":         "/c/tools/ns/_..",
		"ns:a:b":        "/c/tools/ns/a_b",
		"ns:\x00/../..": "/c/tools/ns/__.._..",
	}
	for id, want := range tests {
		g := p.Grant(&manifest.Tool{ToolID: id}, noEnv)
		if filepath.Dir(g.CacheDir) != filepath.FromSlash(want) {
			t.Errorf("CacheDir for %q = %q, want %q", id, g.CacheDir, want)
		}
	}
}

func TestGrant_hostileRequestIsBounded(t *testing.T) {
	p := parse(t, `fileAccess: {allowRead: ["data/**", "docs/*/x*y*z/**"]}
networkAccess: {allowHosts: ["*"]}
env: [A]`)
	var reads, hosts, env []string
	for i := 0; i < 1000; i++ {
		reads = append(reads, strings.Repeat("**/*a*b*/", 50)+"x")
		hosts = append(hosts, "h"+strings.Repeat("x", i%50)+".example.com")
		env = append(env, "A")
	}
	g := p.Grant(tool("t:x", &manifest.SecurityContext{
		FileAccess:    &manifest.FileAccess{AllowRead: reads},
		NetworkAccess: &manifest.NetworkAccess{AllowHosts: hosts},
		Env:           env,
	}), noEnv)
	var capped []string
	for _, d := range g.Denials {
		if strings.HasSuffix(d.Requested, "more entries") {
			capped = append(capped, d.Capability+" "+d.Requested)
		}
	}
	want := []string{"fileAccess.allowRead 744 more entries", "networkAccess.allowHosts 744 more entries", "env 744 more entries"}
	if !slices.Equal(capped, want) {
		t.Errorf("capped lists = %q, want %q", capped, want)
	}
	if len(g.Hosts) != 50 || len(g.EnvNames) != 1 {
		t.Errorf("granted %d hosts and %q, want 50 distinct hosts and [A]", len(g.Hosts), g.EnvNames)
	}
}

// TestGrant_cachePerWorkspace pins that $CACHE is per tool and per
// workspace: two policies (two tenants) with different workspaces never
// share a cache folder (tenant B read what tenant A cached).
func TestGrant_cachePerWorkspace(t *testing.T) {
	a := &policy.Policy{CacheDir: "/c", Workspace: "/tenants/a"}
	b := &policy.Policy{CacheDir: "/c", Workspace: "/tenants/b"}
	tl := &manifest.Tool{ToolID: "core:echo"}
	ga, gb := a.Grant(tl, noEnv), b.Grant(tl, noEnv)
	if ga.CacheDir == gb.CacheDir {
		t.Fatalf("both workspaces get %s", ga.CacheDir)
	}
	if again := a.Grant(tl, noEnv); again.CacheDir != ga.CacheDir {
		t.Fatalf("the same workspace moved: %s then %s", ga.CacheDir, again.CacheDir)
	}
}

// TestGrant_hiddenNamedOnly pins that a hidden path is granted only when
// both the request and the ceiling name it: "**" covers neither .env nor
// .ssh/.
func TestGrant_hiddenNamedOnly(t *testing.T) {
	req := &manifest.SecurityContext{FileAccess: &manifest.FileAccess{AllowRead: []string{".env", "**"}}}
	tests := []struct {
		ceiling string
		want    string
	}{
		{`fileAccess: {allowRead: ["**"]}`, "**"},
		{`fileAccess: {allowRead: ["**", ".env"]}`, ".env|**"},
		{`fileAccess: {allowRead: [".*"]}`, ".env"},
	}
	for _, tc := range tests {
		t.Run(tc.ceiling, func(t *testing.T) {
			p, err := policy.Parse([]byte(tc.ceiling), "/etc/policy.yaml")
			if err != nil {
				t.Fatal(err)
			}
			g := p.Grant(&manifest.Tool{ToolID: "t:x", SecurityContext: req}, noEnv)
			var got []string
			for _, r := range g.Read {
				if r.Root == policy.RootWorkspace {
					got = append(got, r.Pattern)
				}
			}
			if strings.Join(got, "|") != tc.want {
				t.Fatalf("workspace reads = %q, want %q", got, tc.want)
			}
		})
	}
}
