package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	"golang.org/x/crypto/ssh"

	"github.com/agenthost/agenthost/host/toolpack"
)

// TestSignPackVerify drives sign, pack (twice: byte-identical), verify
// (a folder, an archive, a tampered folder, an untrusted key) and a
// --dir archive under a policy requiring signatures, whose unpacked copy
// in the cache is then edited: it must not load.
func TestSignPackVerify(t *testing.T) {
	tmp := t.TempDir()
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	block, err := ssh.MarshalPrivateKey(priv, "reviewer")
	if err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(tmp, "key")
	os.WriteFile(key, pem.EncodeToMemory(block), 0o600)
	signer, _ := ssh.NewSignerFromKey(priv)
	line := "reviewer@example.com " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey())))
	allowed := filepath.Join(tmp, "allowed")
	os.WriteFile(allowed, []byte(line+"\n"), 0o644)
	_, otherPriv, _ := ed25519.GenerateKey(rand.Reader)
	otherSigner, _ := ssh.NewSignerFromKey(otherPriv)
	untrusted := filepath.Join(tmp, "untrusted")
	os.WriteFile(untrusted, []byte("mallory "+string(ssh.MarshalAuthorizedKey(otherSigner.PublicKey()))), 0o644)

	src, _ := filepath.Abs("../../toolpacks/core")
	pack := filepath.Join(tmp, "core")
	os.MkdirAll(pack, 0o755)
	for _, f := range []string{"echo.tool.json", "echo.wasm", "README.md"} {
		b, _ := os.ReadFile(filepath.Join(src, f))
		os.WriteFile(filepath.Join(pack, f), b, 0o644)
	}
	cli := func(args ...string) (int, string) {
		var out, errb bytes.Buffer
		code := run(context.Background(), args, strings.NewReader(""), &out, &errb)
		return code, out.String() + errb.String()
	}
	if code, out := cli("sign", pack, "--key", key); code != 0 || !strings.Contains(out, "signed 3 files") {
		t.Fatalf("sign: %d %s", code, out)
	}
	a, b := filepath.Join(tmp, "a.tar.gz"), filepath.Join(tmp, "b.tar.gz")
	if code, out := cli("pack", pack, "-o", a); code != 0 || !strings.Contains(out, "(signed)") {
		t.Fatalf("pack: %d %s", code, out)
	}
	cli("pack", pack, "-o", b)
	ab, _ := os.ReadFile(a)
	bb, _ := os.ReadFile(b)
	if !bytes.Equal(ab, bb) {
		t.Fatal("two packs differ")
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"verify", pack, "--trusted", allowed}, 0, "ok   signed by reviewer@example.com"},
		{[]string{"verify", a, "--trusted", allowed, "--json"}, 0, `"ok": true`},
		{[]string{"verify", a, "--trusted", untrusted}, 1, "untrusted key"},
		{[]string{"verify", pack}, 2, "no trusted keys"},
		{[]string{"pack", pack}, 2, "-o NAME.tar.gz"},
		{[]string{"sign", pack}, 2, "--key FILE"},
	} {
		if code, out := cli(tc.args...); code != tc.code || !strings.Contains(out, tc.want) {
			t.Errorf("%v: %d %s", tc.args, code, out)
		}
	}
	policy := filepath.Join(tmp, "policy.json")
	quoted, _ := json.Marshal(line)
	os.WriteFile(policy, []byte(`{"requireSignature": true, "trustedKeys": [`+string(quoted)+`]}`), 0o644)
	cache := filepath.Join(tmp, "cache")
	if code, out := cli("--policy", policy, "--cache-dir", cache, "--dir", a, "invoke", "core:echo", `{"z":1}`); code != 0 || !strings.Contains(out, `"z": 1`) {
		t.Fatalf("invoke from the archive: %d %s", code, out)
	}
	unpacked, _ := filepath.Glob(filepath.Join(cache, "toolpacks", "*", "README.md"))
	if len(unpacked) != 1 {
		t.Fatalf("unpacked %v", unpacked)
	}
	os.WriteFile(unpacked[0], []byte("edited in the cache"), 0o644)
	if code, out := cli("--policy", policy, "--cache-dir", cache, "--dir", a, "invoke", "core:echo", `{"z":1}`); code != 1 || !strings.Contains(out, "changed README.md") {
		t.Fatalf("an edited cache loaded: %d %s", code, out)
	}
	os.WriteFile(filepath.Join(pack, "echo.wasm"), []byte("tampered"), 0o644)
	if code, out := cli("verify", pack, "--trusted", allowed); code != 1 || !strings.Contains(out, "changed echo.wasm") {
		t.Errorf("tampered: %d %s", code, out)
	}
}

// TestPushPullCLI pushes a signed toolpack to a registry on loopback,
// loads it with --dir oci://…@digest under a policy requiring signatures,
// refuses an unpinned --dir, and pulls it into a folder that verifies.
func TestPushPullCLI(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	reg := strings.TrimPrefix(srv.URL, "http://")
	tmp := t.TempDir()
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	signer, _ := ssh.NewSignerFromKey(priv)
	line := "reviewer " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey())))
	pack := filepath.Join(tmp, "core")
	copyFiles(t, "core", pack, "echo.tool.json", "echo.wasm")
	if _, err := toolpack.Sign(pack, signer); err != nil {
		t.Fatal(err)
	}
	quoted, _ := json.Marshal(line)
	policy := filepath.Join(tmp, "policy.json")
	os.WriteFile(policy, []byte(`{"requireSignature": true, "trustedKeys": [`+string(quoted)+`]}`), 0o644)
	cli := func(args ...string) (int, string) {
		var out, errb bytes.Buffer
		code := run(context.Background(), append([]string{"--policy", policy, "--cache-dir", filepath.Join(tmp, "cache")}, args...), strings.NewReader(""), &out, &errb)
		return code, out.String() + errb.String()
	}
	code, out := cli("push", pack, reg+"/packs/core:1.0.0")
	if code != 0 {
		t.Fatalf("push: %d %s", code, out)
	}
	_, pinned, _ := strings.Cut(out, "pin it as: ")
	pinned = strings.TrimSpace(pinned)
	if !strings.Contains(pinned, "@sha256:") {
		t.Fatalf("push said %s", out)
	}
	if code, out := cli("--dir", "oci://"+pinned, "invoke", "core:echo", `{"o":1}`); code != 0 || !strings.Contains(out, `"o": 1`) {
		t.Fatalf("--dir oci://: %d %s", code, out)
	}
	if code, out := cli("--dir", "oci://"+reg+"/packs/core:1.0.0", "list"); code != 2 || !strings.Contains(out, "pin the toolpack by digest") {
		t.Fatalf("unpinned: %d %s", code, out)
	}
	dest := filepath.Join(tmp, "pulled")
	if code, out := cli("pull", reg+"/packs/core:1.0.0", "-o", dest); code != 0 {
		t.Fatalf("pull: %d %s", code, out)
	}
	if code, out := cli("verify", dest); code != 0 || !strings.Contains(out, "signed by reviewer") {
		t.Fatalf("verify the pulled folder: %d %s", code, out)
	}
}

// sshKeygen makes an ed25519 key pair with the real ssh-keygen; it
// returns the private key's path (the public key is at path + ".pub").
func sshKeygen(t *testing.T, name string) string {
	t.Helper()
	kg, err := exec.LookPath("ssh-keygen")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("ssh-keygen is missing (.ci/run installs openssh-client)")
		}
		t.Skip("ssh-keygen is not installed")
	}
	p := filepath.Join(t.TempDir(), name)
	if out, err := exec.Command(kg, "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", p).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	return p
}

// TestTrustPlainKeys trusts keys as people have them: verify --trusted
// a .pub file made by ssh-keygen, and a policy whose trustedKeys hold a
// public-key line or the path of a .pub file loads the signed pack.
func TestTrustPlainKeys(t *testing.T) {
	key := sshKeygen(t, "alice@laptop")
	pubLine, _ := os.ReadFile(key + ".pub")
	other := sshKeygen(t, "mallory")
	tmp := t.TempDir()
	pack := filepath.Join(tmp, "core")
	copyFiles(t, "core", pack, "echo.tool.json", "echo.wasm")
	cli := func(args ...string) (int, string) {
		var out, errb bytes.Buffer
		code := run(context.Background(), args, strings.NewReader(""), &out, &errb)
		return code, out.String() + errb.String()
	}
	if code, out := cli("sign", pack, "--key", key); code != 0 {
		t.Fatalf("sign: %d %s", code, out)
	}
	os.WriteFile(filepath.Join(tmp, "alice.pub"), pubLine, 0o644)
	for _, tc := range []struct {
		name, trusted string // trusted: a policy's trustedKeys entry
		code          int
		want          string
	}{
		{"a public-key line", strings.TrimSpace(string(pubLine)), 0, `"z": 1`},
		{"a .pub file next to the policy", "alice.pub", 0, `"z": 1`},
		{"another key's .pub file", other + ".pub", 1, "untrusted key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			quoted, _ := json.Marshal(tc.trusted)
			policy := filepath.Join(tmp, "policy.json")
			os.WriteFile(policy, []byte(`{"requireSignature": true, "trustedKeys": [`+string(quoted)+`]}`), 0o644)
			if code, out := cli("--policy", policy, "--cache-dir", filepath.Join(tmp, "cache"), "--dir", pack, "invoke", "core:echo", `{"z":1}`); code != tc.code || !strings.Contains(out, tc.want) {
				t.Fatalf("%d %s", code, out)
			}
		})
	}
	if code, out := cli("verify", pack, "--trusted", key+".pub"); code != 0 || !strings.Contains(out, "signed by alice@laptop") {
		t.Fatalf("verify --trusted KEY.pub: %d %s", code, out)
	}
	if code, out := cli("verify", pack, "--trusted", other+".pub"); code != 1 || !strings.Contains(out, "untrusted key") {
		t.Fatalf("verify --trusted OTHER.pub: %d %s", code, out)
	}
	if code, out := cli("verify", pack, "--trusted", strings.TrimSpace(string(pubLine))); code != 0 || !strings.Contains(out, "signed by alice@laptop") {
		t.Fatalf("verify --trusted 'ssh-ed25519 AAAA… alice@laptop': %d %s", code, out)
	}
}

// TestArchiveCheckedFirst: an archive is checked before it is unpacked.
// Under a policy requiring signatures, --dir of an archive signed by an
// untrusted key (carrying a 64 MiB entry no index lists) is refused and
// leaves nothing in the cache; without that policy, the unindexed entry
// is refused all the same; verify never unpacks it.
func TestArchiveCheckedFirst(t *testing.T) {
	tmp := t.TempDir()
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	trustedSigner, _ := ssh.NewSignerFromKey(priv)
	_, otherPriv, _ := ed25519.GenerateKey(rand.Reader)
	mallory, _ := ssh.NewSignerFromKey(otherPriv)
	allowed := filepath.Join(tmp, "allowed")
	os.WriteFile(allowed, ssh.MarshalAuthorizedKey(trustedSigner.PublicKey()), 0o644)
	pack := filepath.Join(tmp, "core")
	copyFiles(t, "core", pack, "echo.tool.json", "echo.wasm")
	if _, err := toolpack.Sign(pack, mallory); err != nil {
		t.Fatal(err)
	}
	var packed bytes.Buffer
	if _, err := toolpack.Pack(pack, &packed); err != nil {
		t.Fatal(err)
	}
	// The same archive with a 64 MiB entry of zeros appended.
	var hostile bytes.Buffer
	gz := gzip.NewWriter(&hostile)
	tw := tar.NewWriter(gz)
	zr, _ := gzip.NewReader(bytes.NewReader(packed.Bytes()))
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		tw.WriteHeader(h)
		io.Copy(tw, tr)
	}
	tw.WriteHeader(&tar.Header{Name: "bomb", Mode: 0o644, Size: 64 << 20, Typeflag: tar.TypeReg})
	tw.Write(make([]byte, 64<<20))
	tw.Close()
	gz.Close()
	archive := filepath.Join(tmp, "hostile.tar.gz")
	os.WriteFile(archive, hostile.Bytes(), 0o644)
	requiring := filepath.Join(tmp, "requiring.json")
	quoted, _ := json.Marshal(strings.TrimSpace(string(ssh.MarshalAuthorizedKey(trustedSigner.PublicKey()))))
	os.WriteFile(requiring, []byte(`{"requireSignature": true, "trustedKeys": [`+string(quoted)+`]}`), 0o644)
	open := filepath.Join(tmp, "open.json")
	os.WriteFile(open, []byte(`{}`), 0o644)
	cli := func(args ...string) (int, string) {
		var out, errb bytes.Buffer
		code := run(context.Background(), args, strings.NewReader(""), &out, &errb)
		return code, out.String() + errb.String()
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"--dir, signatures required", []string{"--policy", requiring, "--dir", archive, "list"}, "untrusted key"},
		{"--dir, no signature required", []string{"--policy", open, "--dir", archive, "list"}, "added bomb"},
		{"verify", []string{"verify", archive, "--trusted", allowed}, "untrusted key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cache := filepath.Join(t.TempDir(), "cache")
			if code, out := cli(append([]string{"--cache-dir", cache}, tc.args...)...); code == 0 || !strings.Contains(out, tc.want) {
				t.Fatalf("%d %s", code, out)
			}
			if packs, _ := os.ReadDir(filepath.Join(cache, "toolpacks")); len(packs) != 0 {
				t.Fatalf("the refused archive is in the cache: %v", packs)
			}
		})
	}
}
