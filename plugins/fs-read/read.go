package main

import (
	"encoding/base64"
	"errors"
	"io"
	"os"
	"unicode/utf8"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/abi/guest"
	"github.com/agenthost/agenthost/plugins/internal/guestpath"
)

// Encodings of the content.
const (
	EncodingUTF8   = "utf-8"
	EncodingBase64 = "base64"
)

// Limits of the arguments.
const (
	defaultLimit = 64 << 10
	maxLimit     = 1 << 20
)

// Input is the arguments object of fs:read.
type Input struct {
	Path     string `json:"path"`
	Offset   int64  `json:"offset,omitempty"`
	Limit    *int   `json:"limit,omitempty"`
	Encoding string `json:"encoding,omitempty"`
}

// Output is the result of fs:read. NextOffset is set when the file goes on
// after the bytes returned.
type Output struct {
	Path       string `json:"path"`
	Size       int64  `json:"size"`
	Offset     int64  `json:"offset"`
	BytesRead  int    `json:"bytesRead"`
	Encoding   string `json:"encoding"`
	Content    string `json:"content"`
	EOF        bool   `json:"eof"`
	NextOffset *int64 `json:"nextOffset,omitempty"`
}

// Read reads the file in.Path. root is prepended to the guest path to form
// the path opened: "" in the guest, a test folder in unit tests.
//
// In UTF-8 mode a read that would end inside a multi-byte character stops
// before it (NextOffset then points at that character), and content that
// is not valid UTF-8 is an error suggesting base64.
func Read(root string, in Input) (Output, error) {
	p, err := guestpath.Resolve(in.Path)
	if err != nil {
		return Output{}, guest.Errorf(abi.CodeInvalidArguments, "%s", err.Error())
	}
	enc := in.Encoding
	if enc == "" {
		enc = EncodingUTF8
	}
	if enc != EncodingUTF8 && enc != EncodingBase64 {
		return Output{}, guest.Errorf(abi.CodeInvalidArguments, "unknown encoding %q (want utf-8 or base64)", enc)
	}
	limit := defaultLimit
	if in.Limit != nil {
		limit = *in.Limit
	}
	if limit < 1 || limit > maxLimit {
		return Output{}, guest.Errorf(abi.CodeInvalidArguments, "limit must be between 1 and %d, got %d", maxLimit, limit)
	}
	if in.Offset < 0 {
		return Output{}, guest.Errorf(abi.CodeInvalidArguments, "offset must not be negative, got %d", in.Offset)
	}
	f, err := os.Open(root + p)
	if err != nil {
		return Output{}, guestpath.FileError("open", p, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Output{}, guestpath.FileError("stat", p, err)
	}
	if st.IsDir() {
		return Output{}, guest.Errorf(abi.CodeInvalidArguments, "%s is a directory; use fs:list to see its entries", p)
	}
	if !st.Mode().IsRegular() {
		return Output{}, guest.Errorf(abi.CodeInvalidArguments, "%s is not a regular file", p)
	}
	size := st.Size()
	if in.Offset > size {
		return Output{}, guest.Errorf(abi.CodeInvalidArguments, "offset %d is past the end of %s (%d bytes)", in.Offset, p, size)
	}
	// No more than the file holds past the offset: a small file costs a
	// small buffer, not the whole limit (64 KiB by default).
	buf := make([]byte, min(int64(limit), size-in.Offset))
	n, err := f.ReadAt(buf, in.Offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return Output{}, guestpath.FileError("read", p, err)
	}
	buf = buf[:n]
	end := in.Offset + int64(n)
	if enc == EncodingUTF8 {
		if end < size {
			buf = trimPartialRune(buf)
			end = in.Offset + int64(len(buf))
		}
		if !utf8.Valid(buf) {
			return Output{}, guest.Errorf(abi.CodeInvalidArguments, "%s is not UTF-8 text at bytes %d-%d; read it with encoding base64", p, in.Offset, end)
		}
	}
	out := Output{Path: p, Size: size, Offset: in.Offset, BytesRead: len(buf), Encoding: enc, EOF: end >= size}
	if enc == EncodingBase64 {
		out.Content = base64.StdEncoding.EncodeToString(buf)
	} else {
		out.Content = string(buf)
	}
	if !out.EOF {
		out.NextOffset = &end
	}
	return out, nil
}

// trimPartialRune drops an incomplete UTF-8 sequence at the end of b.
func trimPartialRune(b []byte) []byte {
	for i := 1; i <= utf8.UTFMax-1 && i <= len(b); i++ {
		c := b[len(b)-i]
		if c < utf8.RuneSelf {
			return b // ASCII: nothing partial after it
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			return b
		}
	}
	return b
}
