package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agenthost/agenthost/host/receipt"
	"github.com/agenthost/agenthost/host/store"
)

// receiptHistory writes a history of n receipts per tenant, signed with
// a key made by ssh-keygen, and returns the data folder, the key's path
// and an allowed-signers file naming it ops@example.com.
func receiptHistory(t *testing.T, n int, tenants ...string) (data, key, allowed string) {
	t.Helper()
	kg, err := exec.LookPath("ssh-keygen")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("ssh-keygen is missing (.ci/run installs openssh-client)")
		}
		t.Skip("ssh-keygen is not installed")
	}
	dir := t.TempDir()
	data, key = filepath.Join(dir, "data"), filepath.Join(dir, "operator")
	if out, err := exec.Command(kg, "-q", "-t", "ed25519", "-N", "", "-C", "operator", "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	pub, _ := os.ReadFile(key + ".pub")
	allowed = filepath.Join(dir, "allowed_signers")
	os.WriteFile(allowed, []byte(`ops@example.com namespaces="agenthost-receipts" `+string(pub)), 0o644)
	os.MkdirAll(data, 0o700)
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(data, "agenthost.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e := &env{log: hclog.NewNullLogger()}
	stop, err := e.startReceipts(st, receiptFlags{key: key, every: 40, interval: receipt.DefaultSignInterval})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		for _, tenant := range tenants {
			args := []byte(fmt.Sprintf(`{"i":%d}`, i))
			e.receipts.Record(ctx, &receipt.Receipt{Tenant: tenant, CallID: fmt.Sprintf("%016x", i), Tool: "core:echo", ToolVersion: "1.0.0",
				Runner: "wasm:wasi-command", ArgsDigest: receipt.Digest(args), OutputDigest: receipt.Digest(args), Status: "success", Args: args})
		}
	}
	stop()
	return data, key, allowed
}

func runCLI(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestReceiptsVerify checks `receipts verify` exit codes: 0 on whole
// chains (signed, by whom), 1 naming the first bad link of a tampered
// history, 2 on bad usage; and that the export's signature files verify
// with the real ssh-keygen.
func TestReceiptsVerify(t *testing.T) {
	data, _, allowed := receiptHistory(t, 100, "acme", "beta")
	code, out, errOut := runCLI("receipts", "verify", "--data", data, "--allowed-signers", allowed)
	if code != 0 || !strings.Contains(out, "tenant acme: 100 receipts, chain whole") || !strings.Contains(out, "signed to the end by ops@example.com (3 signatures)") || !strings.Contains(out, "tenant beta: 100 receipts") {
		t.Fatalf("verify: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, _ := runCLI("receipts", "verify", "--data", data, "--tenant", "beta", "--json"); code != 0 || !strings.Contains(out, `"tenant":"beta","receipts":100`) || strings.Contains(out, "acme") {
		t.Fatalf("verify --tenant --json: exit %d\n%s", code, out)
	}

	// Export, then ssh-keygen checks each signature file.
	sigs := t.TempDir()
	code, out, errOut = runCLI("receipts", "export", "--data", data, "--tenant", "acme", "--signatures", sigs)
	if code != 0 {
		t.Fatalf("export: exit %d %s", code, errOut)
	}
	var receipts, signatures int
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l exportLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		switch {
		case l.Receipt != nil && l.Receipt.Tenant == "acme" && l.Receipt.Args != nil:
			receipts++
		case l.Signature != nil:
			signatures++
		default:
			t.Fatalf("export line: %s", sc.Text())
		}
	}
	if receipts != 100 || signatures != 3 {
		t.Fatalf("export: %d receipts, %d signatures", receipts, signatures)
	}
	msg, err := os.ReadFile(filepath.Join(sigs, "acme.100.msg"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ssh-keygen", "-Y", "verify", "-n", "agenthost-receipts", "-f", allowed, "-I", "ops@example.com", "-s", filepath.Join(sigs, "acme.100.sig"))
	cmd.Stdin = bytes.NewReader(msg)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen -Y verify: %v\n%s", err, out)
	}
	if code, out, _ := runCLI("receipts", "export", "--data", data, "--tenant", "acme", "--since", "95"); code != 0 || strings.Count(out, `"receipt"`) != 6 {
		t.Fatalf("export --since 95: exit %d\n%s", code, out)
	}

	// An export verifies on its own, and a changed one names its first
	// bad link.
	_, all, _ := runCLI("receipts", "export", "--data", data)
	exp := filepath.Join(t.TempDir(), "export.jsonl")
	os.WriteFile(exp, []byte(all), 0o644)
	if code, out, errOut := runCLI("receipts", "verify", "--file", exp, "--allowed-signers", allowed); code != 0 || !strings.Contains(out, "tenant acme: 100 receipts, chain whole") || !strings.Contains(out, "tenant beta: 100 receipts, chain whole") || !strings.Contains(out, "signed to the end by ops@example.com") {
		t.Fatalf("verify --file: exit %d\n%s%s", code, out, errOut)
	}
	// acme's lines: receipts 1-40, the signature of 40, 41-80, of 80,
	// 81-100, of 100; then beta's.
	lines := strings.SplitAfter(all, "\n")
	edited := strings.Replace(all, lines[20], strings.Replace(lines[20], `"status":"success"`, `"status":"failure"`, 1), 1)
	swapped := append([]string{}, lines...)
	swapped[30], swapped[31] = swapped[31], swapped[30]
	for name, tc := range map[string]struct{ text, want string }{
		"edited":  {edited, "BROKEN at receipt"},
		"swapped": {strings.Join(swapped, ""), "reordered"},
		"cut":     {strings.Join(append(append([]string{}, lines[:101]...), lines[102:]...), ""), "BROKEN at receipt 100: truncated"},
	} {
		os.WriteFile(exp, []byte(tc.text), 0o644)
		if code, out, errOut := runCLI("receipts", "verify", "--file", exp); code != 1 || !strings.Contains(out, tc.want) {
			t.Errorf("verify --file, %s export: exit %d\n%s%s", name, code, out, errOut)
		}
	}
	os.WriteFile(exp, []byte("{\"receipt\": {\"v\": 1}, \"extra\": 1}\n"), 0o644)
	if code, _, _ := runCLI("receipts", "verify", "--file", exp); code != 1 {
		t.Errorf("verify --file of a bad line: exit %d", code)
	}

	// Another key is not allowed.
	other := filepath.Join(t.TempDir(), "allowed_signers")
	os.WriteFile(other, []byte(`ops@example.com namespaces="agenthost-toolpack" `+strings.SplitN(string(mustRead(t, allowed)), `" `, 2)[1]), 0o644)
	if code, out, _ := runCLI("receipts", "verify", "--data", data, "--tenant", "acme", "--allowed-signers", other); code != 1 || !strings.Contains(out, "BROKEN at receipt 40: bad signature") {
		t.Fatalf("a key allowed only for toolpacks: exit %d\n%s", code, out)
	}

	// A cut that took the database's signatures with it: the signatures
	// kept by an earlier export still show it.
	db, err := sql.Open("sqlite", filepath.Join(data, "agenthost.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`DELETE FROM receipts WHERE tenant = 'acme' AND seq > 90; DELETE FROM receipt_signatures WHERE tenant = 'acme' AND seq > 90`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if code, out, _ := runCLI("receipts", "verify", "--data", data, "--tenant", "acme"); code != 0 || !strings.Contains(out, "tenant acme: 90 receipts, chain whole") {
		t.Fatalf("without the kept signatures: exit %d\n%s", code, out)
	}
	if code, out, _ := runCLI("receipts", "verify", "--data", data, "--signatures", sigs, "--allowed-signers", allowed); code != 1 || !strings.Contains(out, "tenant acme: BROKEN at receipt 91: truncated") || !strings.Contains(out, "tenant beta: 100 receipts, chain whole") {
		t.Fatalf("with the kept signatures: exit %d\n%s", code, out)
	}
	os.WriteFile(filepath.Join(sigs, "acme.100.msg"), []byte("agenthost-receipts 1\nnot a message\n"), 0o644)
	if code, _, _ := runCLI("receipts", "verify", "--data", data, "--signatures", sigs); code != 2 {
		t.Fatalf("a bad kept message: exit %d", code)
	}

	// Tampering.
	db, err = sql.Open("sqlite", filepath.Join(data, "agenthost.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE receipts SET args = '{"i":-1}' WHERE tenant = 'acme' AND seq = 57`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	code, out, _ = runCLI("receipts", "verify", "--data", data)
	if code != 1 || !strings.Contains(out, "tenant acme: BROKEN at receipt 57: edited") || !strings.Contains(out, "tenant beta: 100 receipts, chain whole") {
		t.Fatalf("tampered: exit %d\n%s", code, out)
	}

	for _, args := range [][]string{
		{"receipts"}, {"receipts", "check"}, {"receipts", "verify", "--data", t.TempDir()},
		{"receipts", "verify", "--data", data, "--store", "postgres://x"}, {"receipts", "verify", "--data", data, "--since", "3"},
		{"receipts", "export", "--data", data, "--allowed-signers", allowed}, {"receipts", "verify", "--data", data, "--allowed-signers", "/nonexistent"},
	} {
		if code, _, _ := runCLI(args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestReceiptKey: serve's key must be an SSH private key without a
// passphrase.
func TestReceiptKey(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad")
	os.WriteFile(bad, []byte("not a key"), 0o600)
	e := &env{log: hclog.NewNullLogger()}
	for _, f := range []receiptFlags{{key: bad, every: 1, interval: 1}, {key: filepath.Join(dir, "missing"), every: 1, interval: 1}, {every: 0, interval: 1}} {
		if _, err := e.startReceipts(nil, f); err == nil {
			t.Errorf("%+v: started", f)
		}
	}
}

// TestServeReceipts starts a real `agenthost serve` with a receipt key,
// makes calls (one refused), stops it with SIGTERM, and verifies that
// every call left a receipt in a chain signed to its end.
func TestServeReceipts(t *testing.T) {
	_, key, allowed := receiptHistory(t, 0)
	bin := filepath.Join(t.TempDir(), "agenthost")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	toolpacks, _ := filepath.Abs("../../toolpacks")
	data := filepath.Join(t.TempDir(), "data")
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--dir", toolpacks, "--data", data, "--receipt-key", key, "--log-level", "error")
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir())
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	base, token := serveBanner(t, bufio.NewScanner(stderr))
	go io.Copy(io.Discard, stderr)
	for _, body := range []string{`{"n":1}`, `{"n":2}`, `not json`, `{"n":3}`} {
		req, _ := http.NewRequest("POST", base+"/v1/tools/core:echo/call", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve exited with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
	code, out, errOut := runCLI("receipts", "verify", "--data", data, "--allowed-signers", allowed)
	if code != 0 || !strings.Contains(out, "tenant default: 3 receipts, chain whole") || !strings.Contains(out, "signed to the end by ops@example.com") {
		t.Fatalf("verify: exit %d\n%s%s", code, out, errOut)
	}
}
