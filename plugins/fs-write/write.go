package main

import (
	"encoding/base64"
	"errors"
	"io/fs"
	"os"
	"path"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/abi/guest"
	"github.com/agenthost/agenthost/plugins/internal/guestpath"
)

// Encodings of the content.
const (
	EncodingUTF8   = "utf-8"
	EncodingBase64 = "base64"
)

// Write modes.
const (
	ModeOverwrite = "overwrite"
	ModeAppend    = "append"
	ModeCreate    = "create"
)

// Input is the arguments object of fs:write.
type Input struct {
	Path       string `json:"path"`
	Content    string `json:"content"`
	Encoding   string `json:"encoding,omitempty"`
	Mode       string `json:"mode,omitempty"`
	CreateDirs *bool  `json:"createDirs,omitempty"`
}

// Output is the result of fs:write. Size is the file's size after the
// write; Created says whether the file did not exist before.
type Output struct {
	Path         string `json:"path"`
	BytesWritten int    `json:"bytesWritten"`
	Size         int64  `json:"size"`
	Created      bool   `json:"created"`
}

// Write writes in.Content to in.Path. root is prepended to guest paths to
// form the paths opened: "" in the guest, a test folder in unit tests.
func Write(root string, in Input) (Output, error) {
	p, err := guestpath.Resolve(in.Path)
	if err != nil {
		return Output{}, guest.Errorf(abi.CodeInvalidArguments, "%s", err.Error())
	}
	data, err := content(in)
	if err != nil {
		return Output{}, err
	}
	flags := os.O_WRONLY | os.O_CREATE
	switch in.Mode {
	case "", ModeOverwrite:
		flags |= os.O_TRUNC
	case ModeAppend:
		flags |= os.O_APPEND
	case ModeCreate:
		flags |= os.O_EXCL
	default:
		return Output{}, guest.Errorf(abi.CodeInvalidArguments, "unknown mode %q (want overwrite, append or create)", in.Mode)
	}
	if in.CreateDirs == nil || *in.CreateDirs {
		if err := os.MkdirAll(root+path.Dir(p), 0o755); err != nil {
			return Output{}, guestpath.FileError("create folder", path.Dir(p), err)
		}
	}
	_, statErr := os.Lstat(root + p)
	created := errors.Is(statErr, fs.ErrNotExist)
	f, err := os.OpenFile(root+p, flags, 0o644)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return Output{}, guest.Errorf(abi.CodeToolError, "%s already exists (mode create); use mode overwrite or append", p)
		}
		return Output{}, guestpath.FileError("open", p, err)
	}
	n, err := f.Write(data)
	if err != nil {
		_ = f.Close()
		return Output{}, guestpath.FileError("write", p, err)
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return Output{}, guestpath.FileError("stat", p, err)
	}
	if err := f.Close(); err != nil {
		return Output{}, guestpath.FileError("close", p, err)
	}
	return Output{Path: p, BytesWritten: n, Size: st.Size(), Created: created}, nil
}

// content decodes the bytes to write.
func content(in Input) ([]byte, error) {
	switch in.Encoding {
	case "", EncodingUTF8:
		return []byte(in.Content), nil
	case EncodingBase64:
		b, err := base64.StdEncoding.DecodeString(in.Content)
		if err != nil {
			return nil, guest.Errorf(abi.CodeInvalidArguments, "content is not valid base64: %s", err.Error())
		}
		return b, nil
	}
	return nil, guest.Errorf(abi.CodeInvalidArguments, "unknown encoding %q (want utf-8 or base64)", in.Encoding)
}
