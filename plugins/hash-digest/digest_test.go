package main

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/agenthost/agenthost/abi"
)

func strp(s string) *string { return &s }

func TestDigest(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "workspace/sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "workspace/abc.txt"), []byte("abc"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		in   Input
		want Output
	}{
		// Reference values: FIPS 180-2 / RFC 1321 test vectors for "abc" and "".
		{"sha256 default hex", Input{Text: strp("abc")},
			Output{Algorithm: "sha256", Encoding: "hex", Bytes: 3, Digest: "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"}},
		{"sha1", Input{Text: strp("abc"), Algorithm: "sha1"},
			Output{Algorithm: "sha1", Encoding: "hex", Bytes: 3, Digest: "a9993e364706816aba3e25717850c26c9cd0d89d"}},
		{"md5 empty", Input{Text: strp(""), Algorithm: "md5"},
			Output{Algorithm: "md5", Encoding: "hex", Bytes: 0, Digest: "d41d8cd98f00b204e9800998ecf8427e"}},
		{"sha512", Input{Text: strp("abc"), Algorithm: "sha512"},
			Output{Algorithm: "sha512", Encoding: "hex", Bytes: 3, Digest: "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f"}},
		{"base64", Input{Text: strp("abc"), Encoding: "base64"},
			Output{Algorithm: "sha256", Encoding: "base64", Bytes: 3, Digest: "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0="}},
		{"file", Input{Path: strp("abc.txt")},
			Output{Algorithm: "sha256", Encoding: "hex", Bytes: 3, Path: "/workspace/abc.txt", Digest: "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"}},
		{"utf-8 bytes of text (md5sum of printf é)", Input{Text: strp("é"), Algorithm: "md5"},
			Output{Algorithm: "md5", Encoding: "hex", Bytes: 2, Digest: "66ddcd97cfdeabb2f6fb8a999b4bc76f"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Digest(root, tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Digest =\n %+v\nwant\n %+v", got, tc.want)
			}
		})
	}
}

func TestDigestErrors(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "workspace/dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		in       Input
		wantCode abi.Code
		want     string
	}{
		{"neither", Input{}, abi.CodeInvalidArguments, "exactly one of text and path"},
		{"both", Input{Text: strp("a"), Path: strp("a")}, abi.CodeInvalidArguments, "exactly one of text and path"},
		{"algorithm", Input{Text: strp("a"), Algorithm: "crc32"}, abi.CodeInvalidArguments, "unknown algorithm"},
		{"encoding", Input{Text: strp("a"), Encoding: "base32"}, abi.CodeInvalidArguments, "unknown encoding"},
		{"missing file", Input{Path: strp("nope")}, abi.CodeToolError, "no such file"},
		{"directory", Input{Path: strp("dir")}, abi.CodeInvalidArguments, "is a directory"},
		{"empty path", Input{Path: strp("")}, abi.CodeInvalidArguments, "path is empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Digest(root, tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
			var ae *abi.Error
			if !errors.As(err, &ae) || ae.Code != tc.wantCode {
				t.Errorf("err = %v, want code %s", err, tc.wantCode)
			}
		})
	}
}

// TestHashFile checks that hashFile reads to the end whatever the size
// hint says and however the reader splits its data.
func TestHashFile(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 3*maxChunk/16+5) // over three chunks
	tests := []struct {
		name string
		data []byte
		hint int64
		r    func([]byte) io.Reader
	}{
		{"empty", nil, 0, plainReader},
		{"small, exact hint", []byte("hello world\n"), 12, plainReader},
		{"hint too small (the file grew)", big, 3, plainReader},
		{"hint too large (the file shrank)", []byte("abc"), 1 << 20, plainReader},
		{"over the chunk size", big, int64(len(big)), plainReader},
		{"one byte per read", big[:5000], 5000, func(b []byte) io.Reader { return iotest.OneByteReader(bytes.NewReader(b)) }},
		{"data with the EOF", big, int64(len(big)), func(b []byte) io.Reader { return iotest.DataErrReader(bytes.NewReader(b)) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := sha256.New()
			n, err := hashFile(h, tc.r(tc.data), tc.hint)
			if err != nil || n != int64(len(tc.data)) {
				t.Fatalf("hashFile = %d, %v; want %d bytes", n, err, len(tc.data))
			}
			if want := sha256.Sum256(tc.data); !bytes.Equal(h.Sum(nil), want[:]) {
				t.Errorf("digest %x, want %x", h.Sum(nil), want)
			}
		})
	}
	t.Run("read error", func(t *testing.T) {
		boom := errors.New("boom")
		if _, err := hashFile(sha256.New(), iotest.ErrReader(boom), 10); !errors.Is(err, boom) {
			t.Errorf("err = %v, want %v", err, boom)
		}
	})
}

// plainReader reads b.
func plainReader(b []byte) io.Reader { return bytes.NewReader(b) }
