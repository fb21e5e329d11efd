package main

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"hash"
	"io"
	"os"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/abi/guest"
	"github.com/agenthost/agenthost/plugins/internal/guestpath"
)

// Algorithms.
const (
	SHA256 = "sha256"
	SHA1   = "sha1"
	MD5    = "md5"
	SHA512 = "sha512"
)

// Encodings of the digest.
const (
	EncodingHex    = "hex"
	EncodingBase64 = "base64"
)

// Input is the arguments object of hash:digest: exactly one of Text and
// Path.
type Input struct {
	Text      *string `json:"text,omitempty"`
	Path      *string `json:"path,omitempty"`
	Algorithm string  `json:"algorithm,omitempty"`
	Encoding  string  `json:"encoding,omitempty"`
}

// Output is the result of hash:digest. Bytes is the number of bytes
// hashed; Path is set when a file was hashed.
type Output struct {
	Algorithm string `json:"algorithm"`
	Encoding  string `json:"encoding"`
	Digest    string `json:"digest"`
	Bytes     int64  `json:"bytes"`
	Path      string `json:"path,omitempty"`
}

// Digest hashes in.Text (its UTF-8 bytes) or the file in.Path. root is
// prepended to guest paths to form the paths opened: "" in the guest, a
// test folder in unit tests.
func Digest(root string, in Input) (Output, error) {
	out := Output{Algorithm: in.Algorithm, Encoding: in.Encoding}
	if out.Algorithm == "" {
		out.Algorithm = SHA256
	}
	if out.Encoding == "" {
		out.Encoding = EncodingHex
	}
	h, err := newHash(out.Algorithm)
	if err != nil {
		return Output{}, err
	}
	if out.Encoding != EncodingHex && out.Encoding != EncodingBase64 {
		return Output{}, guest.Errorf(abi.CodeInvalidArguments, "unknown encoding %q (want hex or base64)", out.Encoding)
	}
	switch {
	case (in.Text == nil) == (in.Path == nil):
		return Output{}, guest.Errorf(abi.CodeInvalidArguments, "give exactly one of text and path")
	case in.Text != nil:
		n, _ := io.WriteString(h, *in.Text)
		out.Bytes = int64(n)
	default:
		p, err := guestpath.Resolve(*in.Path)
		if err != nil {
			return Output{}, guest.Errorf(abi.CodeInvalidArguments, "%s", err.Error())
		}
		f, err := os.Open(root + p)
		if err != nil {
			return Output{}, guestpath.FileError("open", p, err)
		}
		defer f.Close()
		var size int64
		if st, err := f.Stat(); err == nil {
			if st.IsDir() {
				return Output{}, guest.Errorf(abi.CodeInvalidArguments, "%s is a directory, not a file", p)
			}
			size = st.Size()
		}
		n, err := hashFile(h, f, size)
		if err != nil {
			return Output{}, guestpath.FileError("read", p, err)
		}
		out.Bytes, out.Path = n, p
	}
	sum := h.Sum(nil)
	if out.Encoding == EncodingHex {
		out.Digest = hex.EncodeToString(sum)
	} else {
		out.Digest = base64.StdEncoding.EncodeToString(sum)
	}
	return out, nil
}

// maxChunk is the largest buffer hashFile reads into.
const maxChunk = 64 << 10

// hashFile writes all of r to h and returns how many bytes it read.
// Its buffer holds the size stat gave plus one byte, up to maxChunk:
// a small file is then read whole, its end seen in two reads. io.Copy
// (and *os.File's WriteTo, hidden here so io.CopyBuffer uses this
// buffer) would allocate and clear 32 KiB for any file: in WebAssembly
// guests, that costs several times a small file's hash.
// Even a file whose size changed after the stat is read to its end.
func hashFile(h hash.Hash, r io.Reader, size int64) (int64, error) {
	return io.CopyBuffer(h, struct{ io.Reader }{r}, make([]byte, min(max(size+1, 512), maxChunk)))
}

// newHash returns the hash function named alg.
func newHash(alg string) (hash.Hash, error) {
	switch alg {
	case SHA256:
		return sha256.New(), nil
	case SHA1:
		return sha1.New(), nil
	case MD5:
		return md5.New(), nil
	case SHA512:
		return sha512.New(), nil
	}
	return nil, guest.Errorf(abi.CodeInvalidArguments, "unknown algorithm %q (want sha256, sha1, md5 or sha512)", alg)
}
