package toolpack_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/toolpack"
)

// needSSHKeygen returns the path of ssh-keygen; CI must have it.
func needSSHKeygen(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("ssh-keygen")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("ssh-keygen is missing (.ci/run installs openssh-client)")
		}
		t.Skip("ssh-keygen is not installed")
	}
	return p
}

// newKey makes an ed25519 key pair with ssh-keygen; it returns the
// private key's path and the public key line.
func newKey(t *testing.T, kg, name string) (string, string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if out, err := exec.Command(kg, "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", p).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	pub, err := os.ReadFile(p + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	return p, strings.TrimSpace(string(pub))
}

// pack makes a small toolpack folder.
func newPack(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"echo.tool.json": `{"toolId":"x:echo"}`,
		"echo.wasm":      "\x00asm\x01\x00\x00\x00",
		"sub/notes.md":   "# notes\n",
		".git/HEAD":      "ignored",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func signers(t *testing.T, lines ...string) []toolpack.Signer {
	t.Helper()
	s, err := toolpack.ParseAllowedSigners(lines)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestInterop signs with agenthost and verifies with ssh-keygen, then
// signs with ssh-keygen and verifies with agenthost.
func TestInterop(t *testing.T) {
	kg := needSSHKeygen(t)
	key, pub := newKey(t, kg, "alice")
	allowed := filepath.Join(t.TempDir(), "allowed_signers")
	os.WriteFile(allowed, []byte("alice@example.com "+pub+"\n"), 0o644)

	dir := newPack(t)
	signer, err := toolpack.LoadPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := toolpack.Sign(dir, signer); err != nil {
		t.Fatal(err)
	}
	idx, _ := os.Open(filepath.Join(dir, toolpack.IndexFile))
	cmd := exec.Command(kg, "-Y", "verify", "-f", allowed, "-I", "alice@example.com", "-n", toolpack.Namespace, "-s", filepath.Join(dir, toolpack.SignatureFile))
	cmd.Stdin = idx
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen does not verify our signature: %v\n%s", err, out)
	}
	idx.Close()

	dir2 := newPack(t)
	if _, err := toolpack.WriteIndex(dir2); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(kg, "-Y", "sign", "-n", toolpack.Namespace, "-f", key, filepath.Join(dir2, toolpack.IndexFile)).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen sign: %v\n%s", err, out)
	}
	trusted, err := toolpack.ReadAllowedSigners(allowed)
	if err != nil {
		t.Fatal(err)
	}
	v, err := toolpack.Verify(dir2, trusted, time.Now())
	if err != nil || v.Principal != "alice@example.com" || !strings.HasPrefix(v.Fingerprint, "SHA256:") || len(v.Index.Files) != 3 {
		t.Fatalf("ssh-keygen's signature: %+v %v", v, err)
	}
}

// TestVerifyFailures pins every reason a folder does not verify.
func TestVerifyFailures(t *testing.T) {
	kg := needSSHKeygen(t)
	key, pub := newKey(t, kg, "alice")
	_, otherPub := newKey(t, kg, "mallory")
	signer, _ := toolpack.LoadPrivateKey(key)
	signed := func() string {
		dir := newPack(t)
		if _, err := toolpack.Sign(dir, signer); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	trusted := signers(t, "alice "+pub)
	tests := []struct {
		name    string
		dir     func() string
		trusted []toolpack.Signer
		reason  string
		detail  string
	}{
		{"unsigned", func() string { return newPack(t) }, trusted, "unsigned", "no toolpack.json"},
		{"index without signature", func() string {
			d := newPack(t)
			toolpack.WriteIndex(d)
			return d
		}, trusted, "unsigned", "no toolpack.json.sig"},
		{"untrusted key", signed, signers(t, "mallory "+otherPub), "untrusted key", "not in the allowed signers"},
		{"wrong namespace for the key", signed, signers(t, `alice namespaces="git" `+pub), "untrusted key", "only for the namespaces git"},
		{"expired key", signed, signers(t, "alice valid-before=20200101 "+pub), "untrusted key", "expired"},
		{"not yet valid", signed, signers(t, "alice valid-after=29990101Z "+pub), "untrusted key", "valid only after"},
		{"index edited", func() string {
			d := signed()
			p := filepath.Join(d, toolpack.IndexFile)
			b, _ := os.ReadFile(p)
			os.WriteFile(p, bytes.Replace(b, []byte(`"version": 1`), []byte(`"version": 1 `), 1), 0o644)
			return d
		}, trusted, "bad signature", "does not match its signature"},
		{"file added", func() string {
			d := signed()
			os.WriteFile(filepath.Join(d, "evil.wasm"), []byte("x"), 0o644)
			return d
		}, trusted, "files changed", "added evil.wasm"},
		{"file changed", func() string {
			d := signed()
			os.WriteFile(filepath.Join(d, "echo.wasm"), []byte("tampered"), 0o644)
			return d
		}, trusted, "files changed", "changed echo.wasm"},
		{"file removed", func() string {
			d := signed()
			os.Remove(filepath.Join(d, "sub", "notes.md"))
			return d
		}, trusted, "files changed", "removed sub/notes.md"},
		{"garbage signature", func() string {
			d := signed()
			os.WriteFile(filepath.Join(d, toolpack.SignatureFile), []byte("-----BEGIN SSH SIGNATURE-----\nAAAA\n-----END SSH SIGNATURE-----\n"), 0o644)
			return d
		}, trusted, "bad signature", "not an SSH signature"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := toolpack.Verify(tc.dir(), tc.trusted, time.Now())
			ve, ok := err.(*toolpack.VerifyError)
			if !ok || ve.Reason != tc.reason || !strings.Contains(ve.Detail, tc.detail) {
				t.Fatalf("got %v, want %s: …%s…", err, tc.reason, tc.detail)
			}
		})
	}
	// Another namespace, signed by ssh-keygen itself.
	d := newPack(t)
	toolpack.WriteIndex(d)
	exec.Command(kg, "-Y", "sign", "-n", "file", "-f", key, filepath.Join(d, toolpack.IndexFile)).Run()
	if _, err := toolpack.Verify(d, trusted, time.Now()); err == nil || !strings.Contains(err.Error(), `namespace "file"`) {
		t.Fatalf("other namespace: %v", err)
	}
}

// TestAllowedSignersErrors pins that options this host does not enforce
// are rejected, never ignored.
func TestAllowedSignersErrors(t *testing.T) {
	const key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIIh1ZpHKmWuT8NDW6Ijvpk3vHw+RzbUrq4Hxf9n1UVRh"
	for line, want := range map[string]string{
		"alice cert-authority " + key:      `option "cert-authority" is not supported`,
		"alice " + "ssh-ed25519 notbase64": "key:",
		"alice valid-after=2020 " + key:    "valid-after",
		"alice,bob namespaces=\"a,b\"":     "no key after the options",
		"onlyprincipal":                    "want: principals",
	} {
		if _, err := toolpack.ParseAllowedSigners([]string{line}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", line, err, want)
		}
	}
	s, err := toolpack.ParseAllowedSigners([]string{"# comment", "", `alice@x,bob namespaces="agenthost-toolpack,git" ` + key + " comment"})
	if err != nil || len(s) != 1 || len(s[0].Principals) != 2 || len(s[0].Namespaces) != 2 {
		t.Fatalf("%+v %v", s, err)
	}
}

// TestPackReproducible packs a signed folder twice (byte-identical),
// unpacks it and verifies the result; a hostile archive does not unpack.
func TestPackReproducible(t *testing.T) {
	kg := needSSHKeygen(t)
	key, pub := newKey(t, kg, "alice")
	signer, _ := toolpack.LoadPrivateKey(key)
	dir := newPack(t)
	if _, err := toolpack.Sign(dir, signer); err != nil {
		t.Fatal(err)
	}
	var a, b bytes.Buffer
	if _, err := toolpack.Pack(dir, &a); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // a second later: times must not leak in
	os.Chtimes(filepath.Join(dir, "echo.wasm"), time.Now(), time.Now())
	if _, err := toolpack.Pack(dir, &b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("two packs of the same folder differ")
	}
	out := filepath.Join(t.TempDir(), "x")
	if err := toolpack.Unpack(bytes.NewReader(a.Bytes()), out); err != nil {
		t.Fatal(err)
	}
	if _, err := toolpack.Verify(out, signers(t, "alice "+pub), time.Now()); err != nil {
		t.Fatalf("the unpacked folder: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "echo.wasm"), []byte("changed"), 0o644)
	if _, err := toolpack.Pack(dir, io.Discard); err == nil || !strings.Contains(err.Error(), "sign it again") {
		t.Fatalf("packing a changed signed folder: %v", err)
	}
	for name, entry := range map[string]*tar.Header{
		"dotdot":   {Name: "../evil", Typeflag: tar.TypeReg, Mode: 0o644},
		"absolute": {Name: "/etc/evil", Typeflag: tar.TypeReg, Mode: 0o644},
		"symlink":  {Name: "link", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"},
	} {
		var buf bytes.Buffer
		gz := gzip.NewWriter(&buf)
		tw := tar.NewWriter(gz)
		tw.WriteHeader(entry)
		tw.Close()
		gz.Close()
		if err := toolpack.Unpack(&buf, filepath.Join(t.TempDir(), "y")); err == nil {
			t.Errorf("%s: unpacked", name)
		}
	}
}

// TestAllowedSignersLikeOpenSSH reads allowed-signers lines as
// `ssh-keygen -Y verify` does: a line it refuses (an option given twice)
// is refused here too, and one it accepts is accepted.
func TestAllowedSignersLikeOpenSSH(t *testing.T) {
	kg := needSSHKeygen(t)
	key, pub := newKey(t, kg, "alice")
	msg := filepath.Join(t.TempDir(), "msg")
	os.WriteFile(msg, []byte("signed\n"), 0o644)
	if out, err := exec.Command(kg, "-Y", "sign", "-n", toolpack.Namespace, "-f", key, msg).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen sign: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		name, line string
		ok         bool
	}{
		{"one namespaces", `alice namespaces="agenthost-toolpack" ` + pub, true},
		{"two namespaces", `alice namespaces="agenthost-toolpack",namespaces="git" ` + pub, false},
		{"two namespaces, other case", `alice namespaces="git",NAMESPACES="agenthost-toolpack" ` + pub, false},
		{"two valid-after", `alice valid-after="20200101",valid-after="20210101" ` + pub, false},
		{"two valid-before", `alice valid-before="29990101",valid-before="29980101" ` + pub, false},
		{"valid-after and valid-before", `alice valid-after="20200101",valid-before="29990101" ` + pub, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			allowed := filepath.Join(t.TempDir(), "allowed")
			os.WriteFile(allowed, []byte(tc.line+"\n"), 0o644)
			cmd := exec.Command(kg, "-Y", "verify", "-f", allowed, "-I", "alice", "-n", toolpack.Namespace, "-s", msg+".sig")
			cmd.Stdin = strings.NewReader("signed\n")
			out, err := cmd.CombinedOutput()
			if (err == nil) != tc.ok {
				t.Fatalf("ssh-keygen: %v %s (the test expects ok=%v)", err, out, tc.ok)
			}
			_, perr := toolpack.ReadAllowedSigners(allowed)
			if (perr == nil) != tc.ok {
				t.Fatalf("ssh-keygen says ok=%v; this host: %v", tc.ok, perr)
			}
			if perr != nil && !strings.Contains(perr.Error(), "more than once") {
				t.Fatalf("unclear: %v", perr)
			}
		})
	}
}

// TestPlainKeys trusts what people have: a public-key line as in
// ~/.ssh/*.pub, a .pub file, an allowed-signers file, as trustedKeys
// entries; a plain key is trusted for the toolpack namespace only.
func TestPlainKeys(t *testing.T) {
	kg := needSSHKeygen(t)
	key, pub := newKey(t, kg, "alice@laptop")
	_, bobPub := newKey(t, kg, "bob")
	signer, _ := toolpack.LoadPrivateKey(key)
	dir := newPack(t)
	if _, err := toolpack.Sign(dir, signer); err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	os.WriteFile(filepath.Join(base, "alice.pub"), []byte(pub+"\n"), 0o644)
	os.MkdirAll(filepath.Join(base, "keys"), 0o755)
	os.WriteFile(filepath.Join(base, "keys", "allowed_signers"), []byte("# team\nalice@example.com "+pub+"\n"), 0o644)
	fields := strings.Fields(pub)
	for _, tc := range []struct {
		name      string
		entries   []string
		principal string
	}{
		{"a .pub line", []string{pub}, "alice@laptop"},
		{"a .pub line without comment", []string{fields[0] + " " + fields[1]}, "SHA256:"},
		{"a .pub file", []string{"alice.pub"}, "alice@laptop"},
		{"an allowed-signers file", []string{"keys/allowed_signers"}, "alice@example.com"},
		{"an absolute .pub file", []string{filepath.Join(base, "alice.pub")}, "alice@laptop"},
		{"among others", []string{bobPub, "bob@x " + bobPub, pub}, "alice@laptop"},
		{"a principal named like a key type", []string{"ssh-ed25519 " + pub}, "ssh-ed25519"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			trusted, err := toolpack.ParseTrusted(tc.entries, base)
			if err != nil {
				t.Fatal(err)
			}
			v, err := toolpack.Verify(dir, trusted, time.Now())
			if err != nil || !strings.HasPrefix(v.Principal, tc.principal) {
				t.Fatalf("%+v %v", v, err)
			}
		})
	}
	// A file of plain lines reads as an allowed-signers file does.
	trusted, err := toolpack.ReadAllowedSigners(filepath.Join(base, "alice.pub"))
	if err != nil || len(trusted) != 1 || len(trusted[0].Namespaces) != 1 || trusted[0].Namespaces[0] != toolpack.Namespace {
		t.Fatalf("%+v %v", trusted, err)
	}
	// A plain key does not sign for another namespace.
	other := newPack(t)
	toolpack.WriteIndex(other)
	exec.Command(kg, "-Y", "sign", "-n", "git", "-f", key, filepath.Join(other, toolpack.IndexFile)).Run()
	if _, err := toolpack.Verify(other, trusted, time.Now()); err == nil {
		t.Fatal("a plain key verified another namespace")
	}
	for _, tc := range []struct {
		entries []string
		want    string
	}{
		{[]string{"missing.pub"}, "missing.pub"},
		{[]string{"ssh-ed25519 notbase64 alice"}, "key"},
		{[]string{"ssh-rsa " + fields[1]}, "key"}, // the type says rsa, the key is ed25519
	} {
		if _, err := toolpack.ParseTrusted(tc.entries, base); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.entries, err, tc.want)
		}
	}
}

// entry is one tar entry of a hand-made archive.
type entry struct {
	name string
	data []byte
	typ  byte  // 0: a regular file
	size int64 // 0: len(data)
}

// archive writes entries as a .tar.gz.
func archive(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.data)), Typeflag: e.typ, Format: tar.FormatPAX}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Typeflag == tar.TypeSymlink {
			h.Linkname, h.Size = "/etc/passwd", 0
		}
		if e.size != 0 {
			h.Size = e.size
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(e.data); err != nil && e.size == 0 {
			t.Fatal(err)
		}
	}
	tw.Flush()
	gz.Close()
	return buf.Bytes()
}

// counting counts the bytes read through it.
type counting struct {
	r io.Reader
	n int
}

func (c *counting) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// indexOf returns the index bytes listing files.
func indexOf(files map[string][]byte) []byte {
	idx := &toolpack.Index{Version: 1}
	for name, data := range files {
		sum := sha256.Sum256(data)
		idx.Files = append(idx.Files, toolpack.Entry{Path: name, SHA256: hex.EncodeToString(sum[:]), Size: int64(len(data))})
	}
	return idx.Marshal()
}

// TestArchiveHostile feeds hostile archives to Unpack and UnpackWith:
// each is refused with its reason, leaves no folder behind, and a
// signature that does not verify stops the read before the files (a
// 64 MiB entry after it is never inflated).
func TestArchiveHostile(t *testing.T) {
	kg := needSSHKeygen(t)
	key, pub := newKey(t, kg, "alice")
	_, otherPub := newKey(t, kg, "mallory")
	signer, _ := toolpack.LoadPrivateKey(key)
	dir := newPack(t)
	if _, err := toolpack.Sign(dir, signer); err != nil {
		t.Fatal(err)
	}
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	idx, sig := read(toolpack.IndexFile), read(toolpack.SignatureFile)
	files := []entry{{name: "echo.tool.json", data: read("echo.tool.json")}, {name: "echo.wasm", data: read("echo.wasm")}, {name: "sub/notes.md", data: read("sub/notes.md")}}
	good := append([]entry{{name: toolpack.IndexFile, data: idx}, {name: toolpack.SignatureFile, data: sig}}, files...)
	bomb := entry{name: "bomb", data: make([]byte, 64<<20)}
	small := map[string][]byte{"a": []byte("a")}
	over := &toolpack.Index{Version: 1}
	for i := range 3 {
		over.Files = append(over.Files, toolpack.Entry{Path: fmt.Sprint(i), SHA256: strings.Repeat("0", 64), Size: toolpack.MaxFileBytes})
	}
	huge := over.Marshal()
	trusted, untrusted := signers(t, "alice "+pub), signers(t, "mallory "+otherPub)
	tests := []struct {
		name    string
		entries []entry
		trusted []toolpack.Signer
		reason  string
		detail  string
	}{
		{"an unindexed entry", append(append([]entry{}, good...), bomb), nil, "files changed", "added bomb"},
		{"larger than indexed", []entry{{name: toolpack.IndexFile, data: indexOf(small)}, {name: "a", data: make([]byte, 64<<20)}}, nil, "files changed", "67108864 bytes in the archive, 1 in the index"},
		{"another digest", []entry{{name: toolpack.IndexFile, data: indexOf(small)}, {name: "a", data: []byte("b")}}, nil, "files changed", "changed a"},
		{"over the total cap", []entry{{name: toolpack.IndexFile, data: huge}}, nil, "bad archive", "the limit is 536870912"},
		{"no index first", append([]entry{bomb}, good...), nil, "bad archive", "starts with toolpack.json"},
		{"a file missing", good[:3], nil, "files changed", "removed echo.wasm, sub/notes.md"},
		{"a file twice", append(append([]entry{}, good...), files[0]), nil, "files changed", "added echo.tool.json"},
		{"a symlink", append(append([]entry{}, good[:2]...), entry{name: "echo.wasm", typ: tar.TypeSymlink}), nil, "bad archive", "only regular files"},
		{"a bad index path", []entry{{name: toolpack.IndexFile, data: indexOf(map[string][]byte{"../evil": nil})}}, nil, "bad index", "bad path"},
		{"unsigned, then a bomb", []entry{{name: toolpack.IndexFile, data: idx}, bomb}, trusted, "unsigned", "no toolpack.json.sig"},
		{"untrusted, then a bomb", append(append([]entry{}, good[:2]...), bomb), untrusted, "untrusted key", "not in the allowed signers"},
		{"not gzip", nil, nil, "bad archive", "not a gzip stream"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := []byte("plain text")
			if tc.entries != nil {
				data = archive(t, tc.entries...)
			}
			c := &counting{r: bytes.NewReader(data)}
			dest := filepath.Join(t.TempDir(), "x")
			var err error
			if tc.trusted == nil {
				err = toolpack.Unpack(c, dest)
			} else {
				_, err = toolpack.UnpackWith(c, dest, toolpack.ArchiveOptions{Trusted: tc.trusted})
			}
			ve, ok := err.(*toolpack.VerifyError)
			if !ok || ve.Reason != tc.reason || !strings.Contains(ve.Detail, tc.detail) {
				t.Fatalf("got %v, want %s: …%s…", err, tc.reason, tc.detail)
			}
			if _, err := os.Stat(dest); !os.IsNotExist(err) {
				t.Fatalf("a refused archive left %s behind", dest)
			}
			if tc.trusted != nil && c.n > 16<<10 {
				t.Fatalf("read %d of %d compressed bytes past a signature that does not verify", c.n, len(data))
			}
			if _, err := toolpack.VerifyArchive(bytes.NewReader(data), trusted, time.Now()); err == nil {
				t.Fatal("VerifyArchive accepted it")
			}
		})
	}
	// The archive Pack writes reads back, verified, with the files as signed.
	var packed bytes.Buffer
	if _, err := toolpack.Pack(dir, &packed); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(t.TempDir(), "ok")
	v, err := toolpack.UnpackWith(bytes.NewReader(packed.Bytes()), dest, toolpack.ArchiveOptions{Trusted: trusted})
	if err != nil || v.Principal != "alice" {
		t.Fatalf("%+v %v", v, err)
	}
	if _, err := toolpack.Verify(dest, trusted, time.Now()); err != nil {
		t.Fatal(err)
	}
	if v, err := toolpack.VerifyArchive(bytes.NewReader(packed.Bytes()), trusted, time.Now()); err != nil || len(v.Index.Files) != 3 {
		t.Fatalf("%+v %v", v, err)
	}
	// A signature from elsewhere (a registry's referrer) stands in for a missing one.
	unsigned := archive(t, append([]entry{{name: toolpack.IndexFile, data: idx}}, files...)...)
	dest = filepath.Join(t.TempDir(), "ref")
	if _, err := toolpack.UnpackWith(bytes.NewReader(unsigned), dest, toolpack.ArchiveOptions{Trusted: trusted, Signature: sig}); err != nil {
		t.Fatal(err)
	}
	if _, err := toolpack.Verify(dest, trusted, time.Now()); err != nil {
		t.Fatal(err)
	}
}

// FuzzArchive: any bytes are refused or read back as exactly the files
// their index lists; never a panic, never a file outside dest.
func FuzzArchive(f *testing.F) {
	dir := f.TempDir()
	os.WriteFile(filepath.Join(dir, "a.tool.json"), []byte(`{}`), 0o644)
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "sub", "b"), []byte("b"), 0o755)
	var packed bytes.Buffer
	if _, err := toolpack.Pack(dir, &packed); err != nil {
		f.Fatal(err)
	}
	f.Add(packed.Bytes())
	f.Add(archive(f, entry{name: toolpack.IndexFile, data: indexOf(map[string][]byte{"a": []byte("a")})}, entry{name: "a", data: []byte("a")}))
	f.Add(archive(f, entry{name: toolpack.IndexFile, data: []byte(`{"version":1,"files":[{"path":"../x","sha256":"","size":1}]}`)}))
	f.Add([]byte("\x1f\x8b"))
	f.Fuzz(func(t *testing.T, data []byte) {
		root := t.TempDir()
		dest := filepath.Join(root, "x")
		v, err := toolpack.UnpackWith(bytes.NewReader(data), dest, toolpack.ArchiveOptions{})
		if err != nil {
			if _, serr := os.Stat(dest); !os.IsNotExist(serr) {
				t.Fatalf("refused (%v) but left %s", err, dest)
			}
			return
		}
		added, changed, removed, derr := v.Index.Diff(dest)
		if derr != nil || len(added)+len(changed)+len(removed) > 0 {
			t.Fatalf("unpacked other files than indexed: %v %v %v %v", added, changed, removed, derr)
		}
		ents, _ := os.ReadDir(root)
		if len(ents) != 1 {
			t.Fatalf("wrote outside dest: %v", ents)
		}
		if _, err := toolpack.VerifyArchive(bytes.NewReader(data), []toolpack.Signer{}, time.Now()); err == nil {
			t.Fatal("an unsigned archive verified")
		}
	})
}
