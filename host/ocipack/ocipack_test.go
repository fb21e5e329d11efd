package ocipack_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	"golang.org/x/crypto/ssh"

	"github.com/agenthost/agenthost/host/ocipack"
	"github.com/agenthost/agenthost/host/toolpack"
)

// TestPushPull pushes a signed pack to an in-process registry on
// loopback, pulls it by digest (archive and referrer signature), and
// checks that an unpinned ref is refused for pinned pulls, that a wrong
// digest fails, and that something else than a toolpack is refused.
func TestPushPull(t *testing.T) {
	for _, referrers := range []bool{false, true} {
		t.Run(fmt.Sprintf("referrers API %v", referrers), func(t *testing.T) { pushPull(t, referrers) })
	}
}

func pushPull(t *testing.T, referrers bool) {
	srv := httptest.NewServer(registry.New(registry.WithReferrersSupport(referrers), registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.tool.json"), []byte(`{}`), 0o644)
	os.WriteFile(filepath.Join(dir, "a.wasm"), []byte("\x00asm\x01\x00\x00\x00"), 0o644)
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	signer, _ := ssh.NewSignerFromKey(priv)
	if _, err := toolpack.Sign(dir, signer); err != nil {
		t.Fatal(err)
	}
	var archive bytes.Buffer
	if _, err := toolpack.Pack(dir, &archive); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	digest, err := ocipack.Push(ctx, archive.Bytes(), host+"/packs/demo:1.0.0", ocipack.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := ocipack.Pull(ctx, host+"/packs/demo@"+digest, true, ocipack.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Digest != digest || !bytes.Equal(p.Archive, archive.Bytes()) || len(p.Signatures) != 1 {
		t.Fatalf("pulled %s, %d bytes, %d signatures", p.Digest, len(p.Archive), len(p.Signatures))
	}
	sig, _ := os.ReadFile(filepath.Join(dir, toolpack.SignatureFile))
	if !bytes.Equal(p.Signatures[0], sig) {
		t.Fatal("the referrer is not the signature")
	}
	out := filepath.Join(t.TempDir(), "x")
	if err := toolpack.Unpack(bytes.NewReader(p.Archive), out); err != nil {
		t.Fatal(err)
	}
	sshPub, _ := ssh.NewPublicKey(pub)
	trusted, _ := toolpack.ParseAllowedSigners([]string{"r " + string(ssh.MarshalAuthorizedKey(sshPub))})
	if _, err := toolpack.Verify(out, trusted, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := ocipack.Pull(ctx, host+"/packs/demo:1.0.0", true, ocipack.Options{}); err == nil || !strings.Contains(err.Error(), "pin the toolpack by digest") {
		t.Fatalf("tag with pinning: %v", err)
	}
	if p, err := ocipack.Pull(ctx, host+"/packs/demo:1.0.0", false, ocipack.Options{}); err != nil || p.Digest != digest {
		t.Fatalf("tag: %v", err)
	}
	wrong := "sha256:" + strings.Repeat("0", 64)
	if _, err := ocipack.Pull(ctx, host+"/packs/demo@"+wrong, true, ocipack.Options{}); err == nil {
		t.Fatal("a digest that is not there pulled")
	}
	if _, err := ocipack.Push(ctx, []byte("not gzip"), host+"/packs/bad:1", ocipack.Options{}); err == nil {
		t.Fatal("pushed a non-archive")
	}
}
