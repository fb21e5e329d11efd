// Package filecache keeps files derived from tool modules (an
// instrumented module, a rewritten reactor, a start-up snapshot) in a
// folder, so a second process reads them instead of computing them again;
// and it seals the compiled files wazero keeps, whose format has no room
// for a header (Compiled).
//
// Each file starts with a header: a magic line naming its kind, a line
// naming its key, and the SHA-256 of the body that follows. A read checks
// all three: a torn, corrupted, edited or foreign file is removed,
// reported to Discarded and computed again, never used. The key line is
// what stops a whole, valid file of another key (another module's
// artefact, copied or renamed) from being taken for this key's: the file
// name alone says nothing about the bytes inside. Callers derive keys
// from the source module's digest and the version of the transform that
// made the file, so a file is used only for the very input and code that
// produced it. Files are written atomically (a temporary file, then
// a rename), so a concurrent reader sees nothing or the whole file. The
// folder itself must be private to the user (the host checks the cache
// root's owner and mode): someone who can write there can also write a
// matching header.
package filecache

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Store is one kind of derived file in one folder. The zero Dir keeps
// nothing: Load always misses and Save does nothing.
type Store struct {
	// Dir is the folder, created 0700 on the first Save.
	Dir string
	// Magic starts every file of this kind (e.g. "agenthost-meter-file-v1\n").
	Magic string
	// Name maps a key to a file name in Dir.
	Name func(key string) string
	// Discarded, when set, is told of each file that failed its check.
	Discarded func(path, reason string)
	// Gate, when set, lets the owner stop the store's writes (Gate.Close).
	Gate *Gate
}

// Gate stops the writes of the stores that share it. A process's work
// can outlive its owner's Close (a tool still being prepared when its
// runner closes); once Close has returned no write to the folder starts,
// and none is in progress, so the folder can be removed or copied.
type Gate struct {
	mu     sync.Mutex
	closed bool
	writes sync.WaitGroup
}

// enter reports whether a write may start; leave must follow a true.
func (g *Gate) enter() bool {
	if g == nil {
		return true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.writes.Add(1)
	return true
}

func (g *Gate) leave() {
	if g != nil {
		g.writes.Done()
	}
}

// Close refuses every later write and waits for those in progress. A nil
// Gate has nothing to close.
func (g *Gate) Close() {
	if g == nil {
		return
	}
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.writes.Wait()
}

// Path returns the file of key.
func (s *Store) Path(key string) string { return filepath.Join(s.Dir, s.Name(key)) }

// Load returns the body stored under key, or nil when there is none or
// when the file fails its check (then it is removed). valid, when not
// nil, is a further check of the body.
func (s *Store) Load(key string, valid func(body []byte) bool) []byte {
	if s.Dir == "" {
		return nil
	}
	path := s.Path(key)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	if !bytes.HasPrefix(b, []byte(s.Magic)) {
		s.discard(path, "not a file of this kind")
		return nil
	}
	rest := b[len(s.Magic):]
	line := keyLine(key)
	if !bytes.HasPrefix(rest, line) {
		reason := "its header names another key: it is the file of another module or version"
		if !bytes.HasPrefix(rest, []byte(keyPrefix)) {
			reason = "its header names no key (a file of an older layout)"
		}
		s.discard(path, reason)
		return nil
	}
	rest = rest[len(line):]
	if len(rest) < sha256.Size {
		s.discard(path, "it is shorter than its header")
		return nil
	}
	body := rest[sha256.Size:]
	if sum := sha256.Sum256(body); !bytes.Equal(sum[:], rest[:sha256.Size]) || (valid != nil && !valid(body)) {
		s.discard(path, "its content does not match its digest")
		return nil
	}
	return body
}

// keyPrefix starts a file's key line.
const keyPrefix = "key "

// keyLine is the header line naming key.
func keyLine(key string) []byte { return []byte(keyPrefix + key + "\n") }

func (s *Store) discard(path, reason string) {
	if !s.Gate.enter() {
		return
	}
	defer s.Gate.leave()
	_ = os.Remove(path)
	if s.Discarded != nil {
		s.Discarded(path, reason)
	}
}

// Save stores body under key. A key holds no line break (it is one line
// of the header).
func (s *Store) Save(key string, body []byte) error {
	if strings.ContainsAny(key, "\r\n") {
		return fmt.Errorf("file cache: key %q holds a line break", key)
	}
	if s.Dir == "" || !s.Gate.enter() {
		return nil
	}
	defer s.Gate.leave()
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return fmt.Errorf("file cache: %w", err)
	}
	f, err := os.CreateTemp(s.Dir, ".cache-*.tmp")
	if err != nil {
		return fmt.Errorf("file cache: %w", err)
	}
	sum := sha256.Sum256(body)
	hdr := append(append([]byte(s.Magic), keyLine(key)...), sum[:]...)
	_, werr := f.Write(hdr)
	if werr == nil {
		_, werr = f.Write(body) // not appended to hdr: a snapshot is MiBs
	}
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("file cache: %w", err)
	}
	if err := os.Rename(f.Name(), s.Path(key)); err != nil {
		_ = os.Remove(f.Name())
		if errors.Is(err, fs.ErrExist) {
			return nil
		}
		return fmt.Errorf("file cache: %w", err)
	}
	return nil
}
