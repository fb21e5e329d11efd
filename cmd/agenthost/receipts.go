package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"iter"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/agenthost/agenthost/host/cache"
	"github.com/agenthost/agenthost/host/receipt"
	"github.com/agenthost/agenthost/host/store"
	"github.com/agenthost/agenthost/host/toolpack"
)

// receiptsFlags are the flags of `receipts`.
type receiptsFlags struct {
	data, store, tenant, allowed, sigDir, file string
	since                                      uint64
}

func receiptsCommand() command {
	var f receiptsFlags
	return command{
		name: "receipts", usage: "receipts verify|export [--data DIR | --store URL | --file EXPORT] [--tenant T] [--allowed-signers FILE] [--since SEQ] [--signatures DIR] [--json]",
		summary: "check the hash chains of call receipts end to end (exit 1 names the first bad link), or export them as JSON lines",
		flags: func(fs *flag.FlagSet, e *env) {
			fs.StringVar(&f.data, "data", "", "the `DIR` of the SQLite history database (default <cache>/serve)")
			fs.StringVar(&f.store, "store", "", "a PostgreSQL `URL` (postgres://…) holding the history (instead of --data)")
			fs.StringVar(&f.file, "file", "", "verify: check an export (JSON lines of receipts export, `FILE` or - for stdin) instead of a history")
			fs.StringVar(&f.tenant, "tenant", "", "only the chain of `TENANT` (default: every tenant's)")
			fs.StringVar(&f.allowed, "allowed-signers", "", "verify: signatures must be by a key of this allowed-signers `FILE` (ssh-keygen's format) allowed for the namespace agenthost-receipts; without it any key's valid signature counts, named by its fingerprint")
			fs.Uint64Var(&f.since, "since", 0, "export: the receipts from sequence number `SEQ` on")
			fs.StringVar(&f.sigDir, "signatures", "", "export: also write each head signature's signed message and signature to `DIR` (TENANT.SEQ.msg and .sig) for ssh-keygen -Y verify; verify: check the chains against the signatures kept there too (a cut that took the database's signatures with it shows)")
			fs.BoolVar(&e.asJSON, "json", false, "verify: print one JSON report per tenant")
		},
		run: func(ctx context.Context, e *env, args []string) error { return runReceipts(ctx, e, &f, args) },
	}
}

func runReceipts(ctx context.Context, e *env, f *receiptsFlags, args []string) error {
	if len(args) != 1 || (args[0] != "verify" && args[0] != "export") {
		return usageError{"receipts takes one subcommand: verify or export"}
	}
	if args[0] == "verify" && f.since != 0 {
		return usageError{"receipts verify checks whole chains: --since is export's"}
	}
	if args[0] == "export" && f.allowed != "" {
		return usageError{"--allowed-signers is verify's"}
	}
	var trust receipt.Trust
	if f.allowed != "" {
		signers, err := toolpack.ReadAllowedSigners(f.allowed)
		if err != nil {
			return usageError{err.Error()}
		}
		trust = allowedTrust(signers)
	}
	if f.file != "" {
		if args[0] != "verify" || f.data != "" || f.store != "" || f.sigDir != "" {
			return usageError{"--file is verify's, instead of --data or --store (and without --signatures)"}
		}
		return verifyExport(e, f, trust)
	}
	var kept map[string][]*receipt.Signature
	if args[0] == "verify" && f.sigDir != "" {
		var err error
		if kept, err = keptSignatures(f.sigDir); err != nil {
			return usageError{err.Error()}
		}
	}
	st, err := openHistory(ctx, e, f.data, f.store)
	if err != nil {
		return err
	}
	defer st.Close()
	tenants := []string{f.tenant}
	if f.tenant == "" {
		if tenants, err = st.ReceiptTenants(ctx); err != nil {
			return err
		}
		for t := range kept {
			if !slices.Contains(tenants, t) {
				tenants = append(tenants, t)
			}
		}
		slices.Sort(tenants)
	}
	if args[0] == "export" {
		return exportReceipts(ctx, e, st, f, tenants)
	}
	return verifyReceipts(ctx, e, st, tenants, trust, kept)
}

// openHistory opens the history a serve wrote: --store's PostgreSQL, or
// the SQLite file of --data (default <cache>/serve), which must exist.
func openHistory(ctx context.Context, e *env, data, dsn string) (*store.Store, error) {
	switch {
	case dsn != "" && data != "":
		return nil, usageError{"give --store or --data, not both"}
	case dsn != "" && !strings.HasPrefix(dsn, "postgres://") && !strings.HasPrefix(dsn, "postgresql://"):
		return nil, usageError{"--store takes a postgres:// URL (SQLite is --data DIR)"}
	case dsn == "":
		if data == "" {
			root, err := cache.Resolve(e.cacheDir)
			if err != nil {
				return nil, usageError{err.Error()}
			}
			data = filepath.Join(root, "serve")
		}
		dsn = filepath.Join(data, "agenthost.db")
		if _, err := os.Stat(dsn); err != nil {
			// Opening would create an empty database.
			return nil, usageError{fmt.Sprintf("no history at %s: %v", dsn, err)}
		}
	}
	return store.Open(ctx, dsn)
}

// allowedTrust accepts a key of the allowed signers that is allowed for
// the receipts namespace now (namespaces, valid-after, valid-before as
// ssh-keygen reads them).
func allowedTrust(signers []toolpack.Signer) receipt.Trust {
	return func(key ssh.PublicKey) (string, error) {
		now := time.Now()
		for _, s := range signers {
			if string(s.Key.Marshal()) != string(key.Marshal()) {
				continue
			}
			switch {
			case len(s.Namespaces) > 0 && !slices.Contains(s.Namespaces, receipt.Namespace):
				return "", fmt.Errorf("the allowed signers allow it only for %s", strings.Join(s.Namespaces, ","))
			case !s.ValidAfter.IsZero() && now.Before(s.ValidAfter):
				return "", fmt.Errorf("valid only after %s", s.ValidAfter.Format(time.RFC3339))
			case !s.ValidBefore.IsZero() && !now.Before(s.ValidBefore):
				return "", fmt.Errorf("expired at %s", s.ValidBefore.Format(time.RFC3339))
			}
			return s.Principals[0], nil
		}
		return "", errors.New("not in the allowed signers")
	}
}

// maxKept caps the signature files verify --signatures reads.
const maxKept = 100000

// keptSignatures reads the TENANT.SEQ.sig files of dir with their .msg
// files (as export --signatures writes them), by tenant in seq order.
func keptSignatures(dir string) (map[string][]*receipt.Signature, error) {
	sigs, err := filepath.Glob(filepath.Join(dir, "*.sig"))
	if err != nil {
		return nil, err
	}
	if len(sigs) > maxKept {
		return nil, fmt.Errorf("--signatures %s: more than %d signature files", dir, maxKept)
	}
	out := map[string][]*receipt.Signature{}
	for _, p := range sigs {
		msg, err := readSmall(strings.TrimSuffix(p, ".sig")+".msg", 8<<10)
		if err != nil {
			return nil, fmt.Errorf("--signatures: %v", err)
		}
		s, err := receipt.ParseMessage(msg)
		if err != nil {
			return nil, fmt.Errorf("--signatures: %s: %v", p, err)
		}
		armored, err := readSmall(p, 64<<10)
		if err != nil {
			return nil, fmt.Errorf("--signatures: %v", err)
		}
		s.Signature = string(armored)
		out[s.Tenant] = append(out[s.Tenant], s)
	}
	for _, list := range out {
		slices.SortFunc(list, func(a, b *receipt.Signature) int { return cmp.Compare(a.Seq, b.Seq) })
	}
	return out, nil
}

// readSmall reads a file of at most max bytes.
func readSmall(path string, max int64) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, max)
	}
	return os.ReadFile(path)
}

// mergeSignatures yields the signatures of a and of kept in seq order;
// a kept signature identical to one of a's is given once.
func mergeSignatures(a iter.Seq2[*receipt.Signature, error], kept []*receipt.Signature) iter.Seq2[*receipt.Signature, error] {
	return func(yield func(*receipt.Signature, error) bool) {
		i := 0
		for s, err := range a {
			if err != nil {
				yield(nil, err)
				return
			}
			for i < len(kept) && kept[i].Seq <= s.Seq {
				if *kept[i] != *s && !yield(kept[i], nil) {
					return
				}
				i++
			}
			if !yield(s, nil) {
				return
			}
		}
		for ; i < len(kept); i++ {
			if !yield(kept[i], nil) {
				return
			}
		}
	}
}

func verifyReceipts(ctx context.Context, e *env, st *store.Store, tenants []string, trust receipt.Trust, kept map[string][]*receipt.Signature) error {
	if len(tenants) == 0 {
		fmt.Fprintln(e.stdout, "no receipts")
		return nil
	}
	reps := make([]receipt.Report, 0, len(tenants))
	for _, t := range tenants {
		rep, err := receipt.Verify(t, st.Receipts(ctx, t, 0), mergeSignatures(st.ReceiptSignatures(ctx, t, 0), kept[t]), trust)
		if err != nil {
			return err
		}
		reps = append(reps, rep)
	}
	return e.printReports(reps)
}

// printReports prints each tenant's verdict (a line, or a JSON object
// with --json); exit 1 when a chain is broken.
func (e *env) printReports(reps []receipt.Report) error {
	bad := false
	for _, rep := range reps {
		bad = bad || rep.Break != nil
		if e.asJSON {
			b, _ := json.Marshal(rep)
			fmt.Fprintln(e.stdout, string(b))
			continue
		}
		fmt.Fprintln(e.stdout, escapeText(describeReport(rep)))
	}
	if bad {
		return exitError{1}
	}
	return nil
}

// verifyExport checks the chains of an export: its lines are read one at
// a time (each at most receipt.MaxLine), each tenant's receipts in order
// with its signatures after the receipts they cover, as export writes
// them; one receipt of look-ahead per tenant, so memory stays bounded.
func verifyExport(e *env, f *receiptsFlags, trust receipt.Trust) error {
	in := e.stdin
	if f.file != "-" {
		file, err := os.Open(f.file)
		if err != nil {
			return usageError{err.Error()}
		}
		defer file.Close()
		in = file
	}
	type chain struct {
		v       *receipt.Verifier
		pending *receipt.Receipt
	}
	chains := map[string]*chain{}
	var order []string
	get := func(tenant string) (*chain, error) {
		c := chains[tenant]
		if c == nil {
			if len(chains) >= 100000 {
				return nil, errors.New("the export holds more than 100,000 tenants")
			}
			c = &chain{v: receipt.NewVerifier(tenant, trust)}
			chains[tenant] = c
			order = append(order, tenant)
		}
		return c, nil
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), receipt.MaxLine)
	line := 0
	for sc.Scan() {
		line++
		if len(strings.TrimSpace(sc.Text())) == 0 {
			continue
		}
		var raw struct {
			Receipt   json.RawMessage `json:"receipt"`
			Signature json.RawMessage `json:"signature"`
		}
		dec := json.NewDecoder(strings.NewReader(sc.Text()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&raw); err != nil || (raw.Receipt == nil) == (raw.Signature == nil) {
			return fmt.Errorf("%s:%d: not an export line (one receipt or one signature)", f.file, line)
		}
		if raw.Signature != nil {
			var s receipt.Signature
			sd := json.NewDecoder(strings.NewReader(string(raw.Signature)))
			sd.DisallowUnknownFields()
			if err := sd.Decode(&s); err != nil {
				return fmt.Errorf("%s:%d: signature: %v", f.file, line, err)
			}
			if f.tenant != "" && s.Tenant != f.tenant {
				continue
			}
			c, err := get(s.Tenant)
			if err != nil {
				return err
			}
			c.v.Signature(&s)
			continue
		}
		r, err := receipt.Decode(raw.Receipt)
		if err != nil {
			return fmt.Errorf("%s:%d: %v", f.file, line, err)
		}
		if f.tenant != "" && r.Tenant != f.tenant {
			continue
		}
		c, err := get(r.Tenant)
		if err != nil {
			return err
		}
		if c.pending != nil {
			c.v.Receipt(c.pending, r)
		}
		c.pending = r
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: line %d: %v", f.file, line+1, err)
	}
	if f.tenant != "" && len(order) == 0 {
		order = append(order, f.tenant)
		chains[f.tenant] = &chain{v: receipt.NewVerifier(f.tenant, trust)}
	}
	reps := make([]receipt.Report, 0, len(order))
	for _, t := range order {
		c := chains[t]
		if c.pending != nil {
			c.v.Receipt(c.pending, nil)
		}
		reps = append(reps, c.v.Done())
	}
	return e.printReports(reps)
}

// describeReport is one tenant's verdict in a line.
func describeReport(rep receipt.Report) string {
	if b := rep.Break; b != nil {
		return fmt.Sprintf("tenant %s: BROKEN at receipt %d: %s: %s (%d receipts good before it)", rep.Tenant, b.Seq, b.Kind, b.Detail, rep.Receipts)
	}
	if rep.Receipts == 0 {
		return fmt.Sprintf("tenant %s: no receipts", rep.Tenant)
	}
	s := fmt.Sprintf("tenant %s: %d receipts, chain whole, head %s", rep.Tenant, rep.Receipts, rep.Head)
	switch {
	case rep.Signed == 0:
		return s + "; UNSIGNED (the hashes prove the chain is consistent, not who wrote it nor that it was not cut short)"
	case rep.Signed < rep.Receipts:
		return s + fmt.Sprintf("; signed up to %d by %s (%d signatures), the last %d unsigned", rep.Signed, strings.Join(rep.Signers, ", "), rep.Signatures, rep.Receipts-rep.Signed)
	}
	return s + fmt.Sprintf("; signed to the end by %s (%d signatures)", strings.Join(rep.Signers, ", "), rep.Signatures)
}

// exportLine is one line of an export: a receipt (with its arguments and
// recorded inputs) or a head signature.
type exportLine struct {
	Receipt   *receipt.Receipt   `json:"receipt,omitempty"`
	Signature *receipt.Signature `json:"signature,omitempty"`
}

// exportReceipts writes each tenant's receipts from --since on, each
// signature after the receipt it covers, one JSON line each, reading a
// page at a time.
func exportReceipts(ctx context.Context, e *env, st *store.Store, f *receiptsFlags, tenants []string) error {
	w := bufio.NewWriter(e.stdout)
	defer w.Flush()
	enc := json.NewEncoder(w)
	if f.sigDir != "" {
		if err := os.MkdirAll(f.sigDir, 0o755); err != nil {
			return usageError{err.Error()}
		}
	}
	writeSig := func(s *receipt.Signature) error {
		if err := enc.Encode(exportLine{Signature: s}); err != nil {
			return err
		}
		if f.sigDir == "" {
			return nil
		}
		base := filepath.Join(f.sigDir, fmt.Sprintf("%s.%d", url.PathEscape(s.Tenant), s.Seq))
		if err := os.WriteFile(base+".msg", s.Message(), 0o644); err != nil {
			return err
		}
		return os.WriteFile(base+".sig", []byte(s.Signature), 0o644)
	}
	for _, t := range tenants {
		sigs := st.ReceiptSignatures(ctx, t, f.since)
		nextSig, stop := iter.Pull2(sigs)
		sig, serr, sok := nextSig()
		for r, err := range st.Receipts(ctx, t, f.since) {
			if err != nil {
				stop()
				return err
			}
			if err := enc.Encode(exportLine{Receipt: r}); err != nil {
				stop()
				return err
			}
			for sok && (serr != nil || sig.Seq <= r.Seq) {
				if serr != nil {
					stop()
					return serr
				}
				if err := writeSig(sig); err != nil {
					stop()
					return err
				}
				sig, serr, sok = nextSig()
			}
		}
		// Signatures past the chain's end (a cut-short chain) too.
		for sok {
			if serr != nil {
				stop()
				return serr
			}
			if err := writeSig(sig); err != nil {
				stop()
				return err
			}
			sig, serr, sok = nextSig()
		}
		stop()
	}
	return w.Flush()
}

// receiptFlags are serve's receipt flags.
type receiptFlags struct {
	key      string
	every    int
	interval time.Duration
}

func (r *receiptFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&r.key, "receipt-key", "", "sign the receipt chains' heads with this SSH private key `FILE` (unencrypted OpenSSH; namespace agenthost-receipts); without it the chains are unsigned")
	fs.IntVar(&r.every, "receipt-sign-every", receipt.DefaultSignEvery, "sign a tenant's chain head after `N` new receipts (and every --receipt-sign-interval, and at shutdown)")
	fs.DurationVar(&r.interval, "receipt-sign-interval", receipt.DefaultSignInterval, "sign the heads with unsigned receipts this often")
}

// startReceipts starts serve's receipt recorder on its history store: every
// call of every tenant's host yields a receipt there. The returned stop
// writes what is queued and signs the heads; it runs after the hosts
// close.
func (e *env) startReceipts(st *store.Store, r receiptFlags) (func(), error) {
	if r.every <= 0 || r.interval <= 0 {
		return nil, usageError{"--receipt-sign-every and --receipt-sign-interval must be above 0"}
	}
	opts := receipt.RecorderOptions{SignEvery: r.every, SignInterval: r.interval, Logger: e.log.Named("receipts")}
	if r.key != "" {
		b, err := os.ReadFile(r.key)
		if err != nil {
			return nil, usageError{"--receipt-key: " + err.Error()}
		}
		signer, err := ssh.ParsePrivateKey(b)
		if err != nil {
			var pe *ssh.PassphraseMissingError
			if errors.As(err, &pe) {
				return nil, usageError{fmt.Sprintf("--receipt-key %s is protected by a passphrase; serve signs unattended, so give it a key of its own without one", r.key)}
			}
			return nil, usageError{fmt.Sprintf("--receipt-key %s: %v", r.key, err)}
		}
		opts.Signer = signer
	}
	rec := receipt.NewRecorder(st, opts)
	e.receipts = rec
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := rec.Close(ctx); err != nil {
			e.log.Error("receipts", "error", err)
		}
	}, nil
}
