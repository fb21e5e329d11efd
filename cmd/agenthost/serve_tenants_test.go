package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

func sha(tok string) string {
	s := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(s[:])
}

// writeFiles writes files (path → content) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestServeTenantWorkspaces runs `serve --auth` from the folder that holds
// the auth file, with two tenants without a policy and one with its own:
// none reads the server's working folder (the auth file), the two without
// a policy each get an empty private workspace of their own, and the one
// with a policy gets its policy's workspace.
func TestServeTenantWorkspaces(t *testing.T) {
	toolpacks, _ := filepath.Abs("../../toolpacks")
	dir, data := t.TempDir(), t.TempDir()
	writeFiles(t, dir, map[string]string{
		"auth.yaml": "tokens:\n" +
			"  - {sha256: " + sha("t-one") + ", tenant: one, scopes: [call]}\n" +
			"  - {sha256: " + sha("t-two") + ", tenant: two, scopes: [call]}\n" +
			"  - {sha256: " + sha("t-own") + ", tenant: own, scopes: [call]}\n" +
			"tenants:\n  one: {}\n  two: {}\n  own: {policy: own/policy.yaml}\n",
		"own/policy.yaml":  "workspace: files\n",
		"own/files/own.md": "the tenant's own file\n",
	})
	t.Chdir(dir)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--auth", "auth.yaml", "--dir", toolpacks, "--data", data, "--cache-dir", t.TempDir(), "--log-level", "error"}, strings.NewReader(""), io.Discard, pw)
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	addr := regexp.MustCompile(`serving on (http://\S+)`)
	base := ""
	for base == "" && sc.Scan() {
		if m := addr.FindStringSubmatch(sc.Text()); m != nil {
			base = m[1]
		}
	}
	if base == "" {
		t.Fatalf("serve did not start (exit %d)", <-done)
	}
	go io.Copy(io.Discard, pr)
	read := func(token, path string) (string, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", base+"/v1/tools/fs:read/call", strings.NewReader(`{"path":"`+path+`"}`))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var env struct {
			Status string `json:"status"`
			Output struct {
				Content string `json:"content"`
			} `json:"output"`
		}
		b, _ := io.ReadAll(resp.Body)
		if err := json.Unmarshal(b, &env); err != nil {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		return env.Status, env.Output.Content
	}
	for _, tok := range []string{"t-one", "t-two", "t-own"} {
		if status, content := read(tok, "auth.yaml"); status == "success" {
			t.Errorf("%s reads the auth file: %q", tok, content)
		}
	}
	if status, content := read("t-own", "own.md"); status != "success" || content != "the tenant's own file\n" {
		t.Errorf("the tenant with a policy reads its workspace: %s %q", status, content)
	}
	// The private workspaces are empty folders of their own, for the
	// server's user alone.
	for _, name := range []string{"one", "two"} {
		ws := filepath.Join(data, "workspaces", name)
		fi, err := os.Stat(ws)
		if err != nil || fi.Mode().Perm() != 0o700 {
			t.Fatalf("%s's workspace: %v %v", name, fi, err)
		}
		if entries, _ := os.ReadDir(ws); len(entries) != 0 {
			t.Errorf("%s's workspace is not empty: %v", name, entries)
		}
	}
	writeFiles(t, filepath.Join(data, "workspaces", "one"), map[string]string{"mine.md": "one's\n"})
	if status, content := read("t-one", "mine.md"); status != "success" || content != "one's\n" {
		t.Errorf("one reads its workspace: %s %q", status, content)
	}
	if status, _ := read("t-two", "mine.md"); status == "success" {
		t.Error("two reads one's workspace")
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("serve exited with %d", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
}

// TestServeWorkspaceRefused pins the start-up check of tenants' own
// policies: a workspace that holds the auth file, the credential key,
// the history database, another tenant's policy or workspace is refused,
// with a message saying what to change.
func TestServeWorkspaceRefused(t *testing.T) {
	toolpacks, _ := filepath.Abs("../../toolpacks")
	auth := func(tenants string) string {
		return "tokens:\n  - {sha256: " + sha("tok") + ", tenant: a, scopes: [call]}\ntenants:\n" + tenants
	}
	for _, tc := range []struct {
		name  string
		files map[string]string
		flags []string
		want  string
	}{
		{"policy beside the auth file, no workspace", map[string]string{
			"auth.yaml":     auth("  a: {policy: a.policy.yaml}\n"),
			"a.policy.yaml": "fileAccess: {allowRead: ['**']}\n",
		}, nil, "holds the auth file"},
		{"workspace above the data folder", map[string]string{
			"auth.yaml":      auth("  a: {policy: conf/a.yaml}\n"),
			"conf/a.yaml":    "workspace: ../srv\n",
			"srv/data/.keep": "",
		}, []string{"--data", "srv/data"}, "holds the history database"},
		{"workspace holding the credential key", map[string]string{
			"auth.yaml":     auth("  a: {policy: conf/a.yaml}\n"),
			"conf/a.yaml":   "workspace: ../keys\n",
			"keys/cred.key": strings.Repeat("k", 32),
		}, []string{"--credential-key", "keys/cred.key"}, "holds the credential key"},
		{"workspace holding another tenant's policy", map[string]string{
			"auth.yaml":     auth("  a: {policy: a/a.yaml}\n  b: {policy: common/b.yaml}\n"),
			"a/a.yaml":      "workspace: ../common\n",
			"common/b.yaml": "workspace: ../b-files\n",
			"b-files/x.md":  "x",
		}, nil, `the policy of tenant "b"`},
		{"workspace holding the global policy", map[string]string{
			"auth.yaml":          auth("  a: {policy: a/a.yaml}\n  b: {}\n"),
			"a/a.yaml":           "workspace: ../common\n",
			"common/global.yaml": "fileAccess: {allowRead: ['**']}\n",
		}, []string{"--policy", "common/global.yaml"}, "the global policy"},
		{"workspace holding the cache folder", map[string]string{
			"auth.yaml":    auth("  a: {policy: a/a.yaml}\n"),
			"a/a.yaml":     "workspace: ../var\n",
			"var/cache/.k": "",
		}, []string{"--cache-dir", "var/cache"}, "holds the cache folder"},
		{"one workspace inside another", map[string]string{
			"auth.yaml":    auth("  a: {policy: a/a.yaml}\n  b: {policy: b/b.yaml}\n"),
			"a/a.yaml":     "workspace: ../files\n",
			"b/b.yaml":     "workspace: ../files/b\n",
			"files/b/x.md": "x",
		}, nil, `the workspace of tenant "b"`},
		{"the same workspace", map[string]string{
			"auth.yaml": auth("  a: {policy: a/a.yaml}\n  b: {policy: b/b.yaml}\n"),
			"a/a.yaml":  "workspace: ../files\n",
			"b/b.yaml":  "workspace: ../files\n",
			"files/x":   "x",
		}, nil, `the workspace of tenant "b"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, tc.files)
			t.Chdir(dir)
			args := append([]string{"serve", "--addr", "127.0.0.1:0", "--auth", "auth.yaml", "--dir", toolpacks, "--log-level", "error"}, tc.flags...)
			for flag, dir := range map[string]string{"--data": t.TempDir(), "--cache-dir": t.TempDir()} {
				if !slices.Contains(args, flag) {
					args = append(args, flag, dir)
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			pr, pw := io.Pipe()
			done := make(chan int, 1)
			go func() {
				done <- run(ctx, args, strings.NewReader(""), io.Discard, pw)
				pw.Close()
			}()
			var out strings.Builder
			sc := bufio.NewScanner(pr)
			for sc.Scan() {
				out.WriteString(sc.Text() + "\n")
				if strings.Contains(sc.Text(), "serving on") {
					cancel()
					go io.Copy(io.Discard, pr)
					<-done
					t.Fatalf("serve started: %s", out.String())
				}
			}
			if code := <-done; code != 2 || !strings.Contains(out.String(), tc.want) || !strings.Contains(out.String(), "workspace:") {
				t.Fatalf("exit %d: %s; want 2 and %q", code, out.String(), tc.want)
			}
		})
	}
}
