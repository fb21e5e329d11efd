package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agenthost/agenthost/host/cache"
	"github.com/agenthost/agenthost/host/ocipack"
	"github.com/agenthost/agenthost/host/toolpack"
	"golang.org/x/crypto/ssh"
)

// archiveSuffix marks a --dir that is a packed toolpack.
const archiveSuffix = ".tar.gz"

func packCommand() command {
	return command{
		name: "pack", usage: "pack DIR -o NAME.tar.gz",
		summary: "pack a toolpack folder into a reproducible archive (toolpack.json lists every file's SHA-256)",
		flags: func(fs *flag.FlagSet, e *env) {
			fs.StringVar(&e.out, "o", "", "the archive `FILE` to write (NAME.tar.gz)")
		},
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) != 1 || e.out == "" || !strings.HasSuffix(e.out, archiveSuffix) {
				return usageError{"pack takes one folder and -o NAME.tar.gz"}
			}
			f, err := os.Create(e.out)
			if err != nil {
				return usageError{err.Error()}
			}
			h := sha256.New()
			idx, err := toolpack.Pack(args[0], io.MultiWriter(f, h))
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				os.Remove(e.out)
				return err
			}
			_, signed := os.Stat(filepath.Join(args[0], toolpack.SignatureFile))
			state := "signed"
			if signed != nil {
				state = "unsigned"
			}
			fmt.Fprintf(e.stdout, "packed %d files (%s) into %s sha256:%s\n", len(idx.Files), state, e.out, hex.EncodeToString(h.Sum(nil)))
			return nil
		},
	}
}

func signCommand() command {
	return command{
		name: "sign", usage: "sign DIR --key FILE",
		summary: "sign a toolpack folder with an SSH key (writes toolpack.json and toolpack.json.sig)",
		flags: func(fs *flag.FlagSet, e *env) {
			fs.StringVar(&e.key, "key", "", "an unencrypted OpenSSH private key `FILE` (or sign toolpack.json with ssh-keygen -Y sign -n agenthost-toolpack)")
		},
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) != 1 || e.key == "" {
				return usageError{"sign takes one folder and --key FILE"}
			}
			signer, err := toolpack.LoadPrivateKey(e.key)
			if err != nil {
				return usageError{err.Error()}
			}
			idx, err := toolpack.Sign(args[0], signer)
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "signed %d files of %s with %s\n", len(idx.Files), args[0], ssh.FingerprintSHA256(signer.PublicKey()))
			return nil
		},
	}
}

func verifyCommand() command {
	return command{
		name: "verify", usage: "verify DIR|NAME.tar.gz [--trusted KEYS] [--json]",
		summary: "check a toolpack's signature against trusted keys and its files against the signed index (exit 1 when it fails)",
		flags: func(fs *flag.FlagSet, e *env) {
			fs.StringVar(&e.trusted, "trusted", "", "the trusted `KEYS`: a .pub file, an allowed-signers file, or a public-key line (default: the policy's trustedKeys)")
			fs.BoolVar(&e.asJSON, "json", false, `print {"ok", "principal", "fingerprint", "files"} or {"ok", "reason", "detail"}`)
		},
		run: runVerify,
	}
}

func runVerify(ctx context.Context, e *env, args []string) error {
	if len(args) != 1 {
		return usageError{"verify takes one folder or archive"}
	}
	var trusted []toolpack.Signer
	if e.trusted != "" {
		s, err := toolpack.ParseTrusted([]string{e.trusted}, ".")
		if err != nil {
			return usageError{err.Error()}
		}
		trusted = s
	} else {
		p, err := e.loadPolicy()
		if err != nil {
			return err
		}
		trusted = p.Signers()
	}
	if len(trusted) == 0 {
		return usageError{"no trusted keys: give --trusted KEYS (a .pub file, an allowed-signers file or a public-key line) or a policy with trustedKeys"}
	}
	var v *toolpack.Verified
	var err error
	if strings.HasSuffix(args[0], archiveSuffix) {
		// The signature is checked before any file is inflated; the
		// files are then hashed as they stream by, never written.
		f, oerr := os.Open(args[0])
		if oerr != nil {
			return usageError{oerr.Error()}
		}
		v, err = toolpack.VerifyArchive(f, trusted, time.Now())
		f.Close()
	} else {
		v, err = toolpack.Verify(args[0], trusted, time.Now())
	}
	var ve *toolpack.VerifyError
	if errors.As(err, &ve) {
		ve.Dir = args[0]
	}
	return reportVerify(e, v, err)
}

func reportVerify(e *env, v *toolpack.Verified, err error) error {
	var ve *toolpack.VerifyError
	if err != nil && !errors.As(err, &ve) {
		return err
	}
	if e.asJSON {
		if ve != nil {
			e.printJSON(map[string]any{"ok": false, "reason": ve.Reason, "detail": ve.Detail})
			return exitError{1}
		}
		return e.printJSON(map[string]any{"ok": true, "principal": v.Principal, "fingerprint": v.Fingerprint, "files": len(v.Index.Files)})
	}
	if ve != nil {
		fmt.Fprintf(e.stdout, "FAIL %s\n", escapeText(ve.Error()))
		return exitError{1}
	}
	fmt.Fprintf(e.stdout, "ok   signed by %s (%s); %d files as signed\n", escapeText(v.Principal), v.Fingerprint, len(v.Index.Files))
	return nil
}

// archiveDir returns the folder an archive --dir is unpacked into: under
// the cache, named by the archive's SHA-256, unpacked once (a host that
// requires signatures verifies that folder on every load, so a cache
// edited after verification does not load). With trusted (a policy that
// requires signatures), the archive's signature is checked before any
// file is unpacked; only indexed files are, with their sizes and digests.
func (e *env) archiveDir(archive, cacheExplicit string) (string, error) {
	trusted, err := e.requiredSigners()
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(archive)
	if err != nil {
		return "", usageError{err.Error()}
	}
	sum := sha256.Sum256(data)
	return cachedPack(cacheExplicit, hex.EncodeToString(sum[:]), func(dir string) error {
		if _, err := toolpack.UnpackWith(bytes.NewReader(data), dir, toolpack.ArchiveOptions{Trusted: trusted}); err != nil {
			return archiveError(archive, err)
		}
		return nil
	})
}

// archiveError names the archive a VerifyError is about.
func archiveError(name string, err error) error {
	var ve *toolpack.VerifyError
	if errors.As(err, &ve) {
		ve.Dir = name
	}
	return err
}

// requiredSigners are the keys the policy trusts when it requires
// signatures; nil when it does not require them.
func (e *env) requiredSigners() ([]toolpack.Signer, error) {
	p, err := e.loadPolicy()
	if err != nil || !p.RequireSignature {
		return nil, err
	}
	return p.Signers(), nil
}

// cachedPack returns <cache>/toolpacks/<name>, filling it with fill the
// first time (into a temporary folder renamed into place, so a failed or
// concurrent fill never leaves a half-made pack). The host verifies the
// folder on every load when the policy requires signatures.
func cachedPack(cacheExplicit, name string, fill func(dir string) error) (string, error) {
	root, err := cache.Resolve(cacheExplicit)
	if err != nil {
		return "", usageError{err.Error()}
	}
	if err := cache.Secure(root); err != nil {
		return "", usageError{err.Error()}
	}
	dest := filepath.Join(root, "toolpacks", name)
	if _, err := os.Stat(dest); err == nil {
		return dest, nil
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o700); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dest), ".fill-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if err := fill(filepath.Join(tmp, "pack")); err != nil {
		return "", err
	}
	if err := os.Rename(filepath.Join(tmp, "pack"), dest); err != nil {
		if _, serr := os.Stat(dest); serr != nil {
			return "", err
		}
	}
	return dest, nil
}

// ociPrefix marks a --dir that is a toolpack in an OCI registry.
const ociPrefix = "oci://"

func pushCommand() command {
	return command{
		name: "push", usage: "push DIR|NAME.tar.gz REGISTRY/REPOSITORY:TAG",
		summary: "push a toolpack to an OCI registry (its signature attached as a referrer); prints the digest to pin",
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) != 2 {
				return usageError{"push takes a folder or archive and a reference (registry/repository:tag)"}
			}
			archive, err := archiveBytes(args[0])
			if err != nil {
				return err
			}
			digest, err := ocipack.Push(ctx, archive, args[1], ocipack.Options{})
			if err != nil {
				return err
			}
			name := args[1]
			if i := strings.LastIndex(args[1], ":"); i > strings.LastIndex(args[1], "/") {
				name = args[1][:i]
			}
			fmt.Fprintf(e.stdout, "pushed %s\npin it as: %s@%s\n", args[1], name, digest)
			return nil
		},
	}
}

func pullCommand() command {
	return command{
		name: "pull", usage: "pull REGISTRY/REPOSITORY@sha256:…|:TAG -o DIR",
		summary: "fetch a toolpack from an OCI registry into a new folder (with its attached signature)",
		flags: func(fs *flag.FlagSet, e *env) {
			fs.StringVar(&e.out, "o", "", "the folder `DIR` to create")
		},
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) != 1 || e.out == "" {
				return usageError{"pull takes one reference and -o DIR"}
			}
			digest, err := pullInto(ctx, args[0], false, e.out, nil)
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "pulled %s (%s) into %s\n", args[0], digest, e.out)
			return nil
		},
	}
}

// archiveBytes packs a folder in memory, or reads an archive.
func archiveBytes(path string) ([]byte, error) {
	if strings.HasSuffix(path, archiveSuffix) {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, usageError{err.Error()}
		}
		return b, nil
	}
	var buf bytes.Buffer
	if _, err := toolpack.Pack(path, &buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// pullInto fetches ref and unpacks it into dest (which must not exist),
// adding the newest attached signature when the archive holds none. With
// trusted, that signature is checked before any file is unpacked.
func pullInto(ctx context.Context, ref string, pinned bool, dest string, trusted []toolpack.Signer) (string, error) {
	p, err := ocipack.Pull(ctx, ref, pinned, ocipack.Options{})
	if err != nil {
		return "", err
	}
	o := toolpack.ArchiveOptions{Trusted: trusted}
	if len(p.Signatures) > 0 {
		o.Signature = p.Signatures[len(p.Signatures)-1]
	}
	if _, err := toolpack.UnpackWith(bytes.NewReader(p.Archive), dest, o); err != nil {
		return "", archiveError(ref, err)
	}
	return p.Digest, nil
}

// ociDir returns the folder a --dir oci://REF@sha256:… is pulled into:
// under the cache, named by the digest, fetched once (and verified on
// every load when the policy requires signatures).
func (e *env) ociDir(ctx context.Context, ref, cacheExplicit string) (string, error) {
	ref = strings.TrimPrefix(ref, ociPrefix)
	_, digest, ok := strings.Cut(ref, "@")
	if !ok || !strings.HasPrefix(digest, "sha256:") || len(digest) != len("sha256:")+64 {
		return "", usageError{fmt.Sprintf("--dir %s%s: pin the toolpack by digest (oci://registry/repository@sha256:…); a tag can move after review", ociPrefix, ref)}
	}
	trusted, err := e.requiredSigners()
	if err != nil {
		return "", err
	}
	return cachedPack(cacheExplicit, "oci-"+strings.TrimPrefix(digest, "sha256:"), func(dir string) error {
		_, err := pullInto(ctx, ref, true, dir, trusted)
		return err
	})
}
