package manifest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestHashEarly covers the digest started before the parse: when it
// starts, that it names the file loadFile would, and that loadFile uses
// it only for that file.
func TestHashEarly(t *testing.T) {
	dir := t.TempDir()
	content := []byte("\x00asm\x01\x00\x00\x00early")
	if err := os.WriteFile(filepath.Join(dir, "m.wasm"), content, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "other.wasm"), []byte("other"), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(content)
	want := hex.EncodeToString(sum[:])
	tests := []struct {
		name  string
		doc   string
		start bool
	}{
		{"wasm module", `{"handler":{"type":"wasm","module":"m.wasm"}}`, true},
		{"script", `{"handler":{"type":"external-script","scriptPath":"m.wasm"}}`, true},
		{"not JSON", `{"handler":`, false},
		{"no handler file", `{"handler":{"type":"service-method","serviceName":"x"}}`, false},
		{"missing file", `{"handler":{"type":"wasm","module":"nope.wasm"}}`, false},
		{"outside the folder", `{"handler":{"type":"wasm","module":"../m.wasm"}}`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := hashEarly([]byte(tc.doc), dir)
			if (e != nil) != tc.start {
				t.Fatalf("hashEarly started: %t, want %t", e != nil, tc.start)
			}
			if e == nil {
				return
			}
			<-e.done
			if e.err != nil || e.digest != want {
				t.Errorf("early digest %q, %v; want %s", e.digest, e.err, want)
			}
		})
	}
	t.Run("loadFile uses it only for the same file", func(t *testing.T) {
		early := hashEarly([]byte(`{"handler":{"type":"wasm","module":"m.wasm"}}`), dir)
		tool := &Tool{Dir: dir, Handler: Handler{Type: HandlerWasm, Module: "other.wasm"}, state: &state{}}
		if err := tool.loadFile(early); err != nil {
			t.Fatal(err)
		}
		if other := sha256.Sum256([]byte("other")); tool.state.digest != hex.EncodeToString(other[:]) {
			t.Errorf("digest %s is not other.wasm's", tool.state.digest)
		}
	})
}

// TestHashFileUntil_stopped checks that a stopped hash returns
// errStopped and leaves no remembered digest behind.
func TestHashFileUntil_stopped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.wasm")
	content := make([]byte, 1<<20)
	content[0] = 1
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
	quit := make(chan struct{})
	close(quit)
	if _, err := hashFileUntil(path, quit); !errors.Is(err, errStopped) {
		t.Fatalf("err = %v, want errStopped", err)
	}
	got, err := hashFile(path)
	sum := sha256.Sum256(content)
	if err != nil || got != hex.EncodeToString(sum[:]) {
		t.Errorf("hashFile after a stopped hash = %q, %v", got, err)
	}
	var nilEarly *earlyDigest
	nilEarly.stop() // safe on nil
}

// TestLoadFile_stopsAnUnusedHash checks that loadFile stops an early
// hash of another file than the one it loads, and that stopping twice
// is safe.
func TestLoadFile_stopsAnUnusedHash(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"m.wasm": "m", "other.wasm": "other"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	early := hashEarly([]byte(`{"handler":{"type":"wasm","module":"m.wasm"}}`), dir)
	tool := &Tool{Dir: dir, Handler: Handler{Type: HandlerWasm, Module: "other.wasm"}, state: &state{}}
	if err := tool.loadFile(early); err != nil {
		t.Fatal(err)
	}
	select {
	case <-early.quit:
	default:
		t.Error("the unused early hash was not stopped")
	}
	early.stop()
}
