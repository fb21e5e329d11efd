package toolpack

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"
)

// Signer is one line of an allowed-signers list (the format of
// ssh-keygen's ALLOWED SIGNERS): the principals it speaks for, its key,
// and the options this host enforces: namespaces="…" (the signature's
// namespace must be listed), valid-after and valid-before (checked
// against the time of verification). cert-authority and any other option
// are rejected when the list is read, never ignored, and so is an option
// given twice (as ssh-keygen does).
//
// A plain public-key line ("ssh-ed25519 AAAA… comment", as in
// ~/.ssh/*.pub) is a Signer too: its key is trusted for the toolpack
// namespace only, and its principal is its comment (or, without one, its
// fingerprint).
type Signer struct {
	Principals  []string
	Key         ssh.PublicKey
	Namespaces  []string
	ValidAfter  time.Time
	ValidBefore time.Time
}

// ParseAllowedSigners parses allowed-signers lines and plain public-key
// lines ('#' comments and blank lines skipped).
func ParseAllowedSigners(lines []string) ([]Signer, error) {
	var out []Signer
	for i, line := range lines {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s, err := parseSignerLine(line)
		if err != nil {
			return nil, fmt.Errorf("allowed signer %d: %w", i+1, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// ReadAllowedSigners reads an allowed-signers file or a public-key file
// (a .pub file; one key per line).
func ReadAllowedSigners(path string) ([]Signer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("allowed signers: %w", err)
	}
	s, err := ParseAllowedSigners(strings.Split(string(b), "\n"))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// ParseTrusted reads a list of trusted keys whose entries are each an
// allowed-signers line, a plain public-key line, or (an entry without
// white space) the path of an allowed-signers or .pub file, relative to
// base when not absolute.
func ParseTrusted(entries []string, base string) ([]Signer, error) {
	var out []Signer
	for i, e := range entries {
		e = strings.TrimSpace(e)
		if e == "" || strings.HasPrefix(e, "#") {
			continue
		}
		if strings.ContainsAny(e, " \t") {
			s, err := parseSignerLine(e)
			if err != nil {
				return nil, fmt.Errorf("trusted key %d: %w", i+1, err)
			}
			out = append(out, s)
			continue
		}
		p := e
		if !filepath.IsAbs(p) {
			p = filepath.Join(base, p)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("trusted key %d: %q is not a key line (it has no space) nor a file: %w", i+1, e, err)
		}
		s, err := ParseAllowedSigners(strings.Split(string(b), "\n"))
		if err != nil {
			return nil, fmt.Errorf("trusted key %d: %s: %w", i+1, p, err)
		}
		if len(s) == 0 {
			return nil, fmt.Errorf("trusted key %d: %s holds no key", i+1, p)
		}
		out = append(out, s...)
	}
	return out, nil
}

// plainKey reads a public-key line "keytype base64 [comment]": ok is
// false when the line does not start with a key type, err says why a
// line that does holds no key.
func plainKey(line string) (s Signer, ok bool, err error) {
	f := strings.Fields(line)
	if len(f) < 2 || !keyTypes[f[0]] {
		return Signer{}, false, nil
	}
	raw, err := base64.StdEncoding.DecodeString(f[1])
	if err != nil {
		return Signer{}, true, fmt.Errorf("key: %q is not base64", f[1])
	}
	key, err := ssh.ParsePublicKey(raw)
	if err != nil {
		return Signer{}, true, fmt.Errorf("key: %w", err)
	}
	if key.Type() != f[0] {
		return Signer{}, true, fmt.Errorf("key: the line says %s and the key is %s", f[0], key.Type())
	}
	who := strings.Join(f[2:], " ")
	if who == "" {
		who = ssh.FingerprintSHA256(key)
	}
	return Signer{Principals: []string{who}, Key: key, Namespaces: []string{Namespace}}, true, nil
}

// keyTypes are the SSH public-key algorithms that start a .pub line.
var keyTypes = map[string]bool{
	ssh.KeyAlgoED25519: true, ssh.KeyAlgoRSA: true,
	ssh.KeyAlgoECDSA256: true, ssh.KeyAlgoECDSA384: true, ssh.KeyAlgoECDSA521: true,
	ssh.KeyAlgoSKED25519: true, ssh.KeyAlgoSKECDSA256: true,
}

func parseSignerLine(line string) (Signer, error) {
	s, plain, perr := plainKey(line)
	if plain && perr == nil {
		return s, nil
	}
	s, err := parseAllowedLine(line)
	if err != nil && perr != nil {
		// A line starting with a key type that is no allowed-signers
		// line either: the key is what is wrong.
		return Signer{}, perr
	}
	return s, err
}

// parseAllowedLine reads "principals [options] keytype key [comment]".
func parseAllowedLine(line string) (Signer, error) {
	principals, rest, ok := strings.Cut(line, " ")
	if !ok || principals == "" {
		return Signer{}, errors.New("want: principals [options] keytype key, or keytype key [comment]")
	}
	s := Signer{Principals: strings.Split(principals, ",")}
	rest = strings.TrimSpace(rest)
	// Options come before the key type; the key type starts the key.
	if !strings.HasPrefix(rest, "ssh-") && !strings.HasPrefix(rest, "ecdsa-") && !strings.HasPrefix(rest, "sk-") {
		opts, after, err := cutOptions(rest)
		if err != nil {
			return Signer{}, err
		}
		seen := map[string]bool{}
		for _, o := range opts {
			name, val, _ := strings.Cut(o, "=")
			val = strings.Trim(val, `"`)
			lname := strings.ToLower(name)
			if seen[lname] {
				// ssh-keygen refuses the line: which one would hold?
				return Signer{}, fmt.Errorf("option %q is given more than once", lname)
			}
			seen[lname] = true
			switch lname {
			case "namespaces":
				s.Namespaces = strings.Split(val, ",")
			case "valid-after":
				t, err := parseSSHTime(val)
				if err != nil {
					return Signer{}, fmt.Errorf("valid-after: %w", err)
				}
				s.ValidAfter = t
			case "valid-before":
				t, err := parseSSHTime(val)
				if err != nil {
					return Signer{}, fmt.Errorf("valid-before: %w", err)
				}
				s.ValidBefore = t
			default:
				return Signer{}, fmt.Errorf("option %q is not supported (this host enforces namespaces, valid-after and valid-before)", name)
			}
		}
		rest = after
	}
	key, _, _, _, err := ssh.ParseAuthorizedKey([]byte(rest))
	if err != nil {
		return Signer{}, fmt.Errorf("key: %w", err)
	}
	s.Key = key
	return s, nil
}

// cutOptions splits the comma-separated options (values may be quoted)
// from the rest of the line.
func cutOptions(s string) ([]string, string, error) {
	var opts []string
	var cur strings.Builder
	quoted := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			quoted = !quoted
			cur.WriteByte(c)
		case c == ',' && !quoted:
			opts = append(opts, cur.String())
			cur.Reset()
		case c == ' ' && !quoted:
			opts = append(opts, cur.String())
			return opts, strings.TrimSpace(s[i+1:]), nil
		default:
			cur.WriteByte(c)
		}
	}
	return nil, "", errors.New("no key after the options")
}

// parseSSHTime reads YYYYMMDD[HHMM[SS]][Z] (UTC with Z, else local).
func parseSSHTime(v string) (time.Time, error) {
	loc := time.Local
	if strings.HasSuffix(v, "Z") {
		v, loc = strings.TrimSuffix(v, "Z"), time.UTC
	}
	for _, layout := range []string{"20060102150405", "200601021504", "20060102"} {
		if len(v) == len(layout) {
			return time.ParseInLocation(layout, v, loc)
		}
	}
	return time.Time{}, fmt.Errorf("%q: want YYYYMMDD[HHMM[SS]][Z]", v)
}

// LoadPrivateKey reads an unencrypted OpenSSH private key file.
func LoadPrivateKey(path string) (ssh.Signer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("signing key: %w", err)
	}
	s, err := ssh.ParsePrivateKey(b)
	if err != nil {
		var pe *ssh.PassphraseMissingError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("signing key %s is protected by a passphrase: sign with `ssh-keygen -Y sign -n %s -f KEY %s` instead (the signature is the same format)", path, Namespace, IndexFile)
		}
		return nil, fmt.Errorf("signing key %s: %w", path, err)
	}
	return s, nil
}

// Sign writes dir's index (toolpack.json) and its signature
// (toolpack.json.sig) made with signer.
func Sign(dir string, signer ssh.Signer) (*Index, error) {
	idx, err := WriteIndex(dir)
	if err != nil {
		return nil, err
	}
	sig, err := sshsig.Sign(bytes.NewReader(idx.Marshal()), signer, sshsig.HashSHA512, Namespace)
	if err != nil {
		return nil, fmt.Errorf("toolpack %s: sign: %w", dir, err)
	}
	if err := os.WriteFile(filepath.Join(dir, SignatureFile), sshsig.Armor(sig), 0o644); err != nil {
		return nil, fmt.Errorf("toolpack %s: %w", dir, err)
	}
	return idx, nil
}

// Verified is a folder that verified: its index and who signed it.
type Verified struct {
	Index       *Index
	Principal   string // the first principal of the trusted signer
	Fingerprint string // SHA256:… of the signing key
}

// VerifyError says why a folder did not verify: Reason is one of
// "unsigned", "bad index", "bad signature", "untrusted key" or
// "files changed".
type VerifyError struct {
	Dir    string
	Reason string
	Detail string
}

func (e *VerifyError) Error() string {
	return fmt.Sprintf("toolpack %s: %s: %s", e.Dir, e.Reason, e.Detail)
}

// Verify checks dir against the allowed signers: the signature of
// toolpack.json is valid for the agenthost-toolpack namespace, its key is
// trusted (for that namespace and now), and the folder holds exactly the
// indexed files with their digests.
func Verify(dir string, trusted []Signer, now time.Time) (*Verified, error) {
	fail := func(reason, format string, args ...any) (*Verified, error) {
		return nil, &VerifyError{Dir: dir, Reason: reason, Detail: fmt.Sprintf(format, args...)}
	}
	raw, err := os.ReadFile(filepath.Join(dir, IndexFile))
	if errors.Is(err, os.ErrNotExist) {
		return fail("unsigned", "no %s (sign it with agenthost sign)", IndexFile)
	}
	if err != nil {
		return fail("bad index", "%v", err)
	}
	armored, err := os.ReadFile(filepath.Join(dir, SignatureFile))
	if errors.Is(err, os.ErrNotExist) {
		return fail("unsigned", "no %s", SignatureFile)
	}
	if err != nil {
		return fail("bad signature", "%v", err)
	}
	idx, err := ParseIndex(raw)
	if err != nil {
		return fail("bad index", "%v", err)
	}
	v, err := checkSignature(dir, raw, idx, armored, trusted, now)
	if err != nil {
		return nil, err
	}
	added, changed, removed, err := idx.Diff(dir)
	if err != nil {
		return fail("files changed", "%v", err)
	}
	if len(added)+len(changed)+len(removed) > 0 {
		var parts []string
		if len(added) > 0 {
			parts = append(parts, "added "+strings.Join(added, ", "))
		}
		if len(changed) > 0 {
			parts = append(parts, "changed "+strings.Join(changed, ", "))
		}
		if len(removed) > 0 {
			parts = append(parts, "removed "+strings.Join(removed, ", "))
		}
		return fail("files changed", "since signing: %s", strings.Join(parts, "; "))
	}
	return v, nil
}

// checkSignature checks that armored is a signature of raw (the index
// idx) for the toolpack namespace by a key trusted for it at now.
func checkSignature(dir string, raw []byte, idx *Index, armored []byte, trusted []Signer, now time.Time) (*Verified, error) {
	fail := func(reason, format string, args ...any) (*Verified, error) {
		return nil, &VerifyError{Dir: dir, Reason: reason, Detail: fmt.Sprintf(format, args...)}
	}
	if armored == nil {
		return fail("unsigned", "no %s", SignatureFile)
	}
	if now.IsZero() {
		now = time.Now()
	}
	sig, err := sshsig.Unarmor(armored)
	if err != nil {
		return fail("bad signature", "%s is not an SSH signature: %v", SignatureFile, err)
	}
	if sig.Namespace != Namespace {
		return fail("bad signature", "the signature is for the namespace %q, not %q", sig.Namespace, Namespace)
	}
	fp := ssh.FingerprintSHA256(sig.PublicKey)
	var who *Signer
	for i := range trusted {
		if bytes.Equal(trusted[i].Key.Marshal(), sig.PublicKey.Marshal()) {
			who = &trusted[i]
			break
		}
	}
	if who == nil {
		return fail("untrusted key", "signed by %s %s, which is not in the allowed signers", sig.PublicKey.Type(), fp)
	}
	if len(who.Namespaces) > 0 && !slices.Contains(who.Namespaces, Namespace) {
		return fail("untrusted key", "the key %s (%s) is allowed only for the namespaces %s", fp, strings.Join(who.Principals, ","), strings.Join(who.Namespaces, ","))
	}
	if !who.ValidAfter.IsZero() && now.Before(who.ValidAfter) {
		return fail("untrusted key", "the key %s is valid only after %s", fp, who.ValidAfter.Format(time.RFC3339))
	}
	if !who.ValidBefore.IsZero() && !now.Before(who.ValidBefore) {
		return fail("untrusted key", "the key %s expired at %s", fp, who.ValidBefore.Format(time.RFC3339))
	}
	if err := sshsig.Verify(bytes.NewReader(raw), sig, sig.PublicKey, sig.HashAlgorithm, Namespace); err != nil {
		return fail("bad signature", "%s does not match its signature (it was changed after signing, or the signature is not for it): %v", IndexFile, err)
	}
	return &Verified{Index: idx, Principal: who.Principals[0], Fingerprint: fp}, nil
}
