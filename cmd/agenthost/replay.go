package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/receipt"
	"github.com/agenthost/agenthost/host/store"
	"github.com/agenthost/agenthost/internal/unidiff"
)

// replayFlags are replay's own flags.
type replayFlags struct {
	data, store, tenant, with string
	since                     uint64
	limit                     int
}

func replayCommand() command {
	var f replayFlags
	return command{
		name: "replay", usage: "replay RECEIPT... [--data DIR | --store URL] [--tenant T] [--since SEQ] [--with DIR] [--json]",
		summary: "run recorded WASM calls again from their receipts and compare the outputs",
		flags: func(fs *flag.FlagSet, e *env) {
			fs.StringVar(&f.data, "data", "", "the `DIR` of the SQLite history database (default <cache>/serve)")
			fs.StringVar(&f.store, "store", "", "a PostgreSQL `URL` (postgres://…) holding the history (instead of --data)")
			fs.StringVar(&f.tenant, "tenant", "default", "the `TENANT` whose receipts RECEIPT names")
			fs.Uint64Var(&f.since, "since", 0, "replay every receipt of the tenant from sequence number `SEQ` on (with no RECEIPT)")
			fs.IntVar(&f.limit, "limit", 1000, "replay at most `N` receipts")
			fs.StringVar(&f.with, "with", "", "also run the tools of toolpack `DIR` (another version) on the same calls and diff their outputs against the recorded version's")
			fs.BoolVar(&e.asJSON, "json", false, "print JSON")
		},
		run: func(ctx context.Context, e *env, args []string) error { return runReplay(ctx, e, &f, args) },
	}
}

// replayLine is the outcome of one receipt's replay.
type replayLine struct {
	Tenant string `json:"tenant"`
	Seq    uint64 `json:"seq"`
	CallID string `json:"callId"`
	Tool   string `json:"tool"`
	// Status is "match", "mismatch", "not-replayable" (Reason says why).
	Status       string `json:"status"`
	Reason       string `json:"reason,omitempty"`
	OutputDigest string `json:"outputDigest,omitempty"`
	CallDigest   string `json:"callDigest"`
	Diff         string `json:"diff,omitempty"`
	Diverged     string `json:"diverged,omitempty"`
	// With is the other version's run on the same call (--with).
	With *withLine `json:"with,omitempty"`
}

// withLine is another version's run of a recorded call.
type withLine struct {
	Version string `json:"version"`
	// Status is "same", "differs" or "not-replayable".
	Status       string `json:"status"`
	Reason       string `json:"reason,omitempty"`
	OutputDigest string `json:"outputDigest,omitempty"`
	Grant        string `json:"grantChanged,omitempty"`
	Diff         string `json:"diff,omitempty"`
}

// replaySummary counts the outcomes.
type replaySummary struct {
	Match         int `json:"match"`
	Mismatch      int `json:"mismatch"`
	NotReplayable int `json:"notReplayable"`
	Same          int `json:"same,omitempty"`
	Differs       int `json:"differs,omitempty"`
}

// maxDiffEdits bounds the diff of two outputs (the algorithm's memory
// grows with its square); past it only the digests are compared.
const maxDiffEdits = 2000

func runReplay(ctx context.Context, e *env, f *replayFlags, args []string) error {
	switch {
	case f.since == 0 && len(args) == 0:
		return usageError{"replay: name a RECEIPT (a sequence number or a call ID) or give --since SEQ"}
	case f.since > 0 && len(args) > 0:
		return usageError{"replay: give RECEIPTs or --since, not both"}
	case f.limit <= 0:
		return usageError{"replay: --limit must be above 0"}
	}
	st, err := openHistory(ctx, e, f.data, f.store)
	if err != nil {
		return err
	}
	defer st.Close()
	receipts, err := replayReceipts(ctx, st, f, args)
	if err != nil {
		return err
	}
	h, err := e.newHost(ctx)
	if err != nil {
		return err
	}
	defer h.Close(ctx)
	var other *host.Host
	if f.with != "" {
		saved := e.dirs
		e.dirs = multiFlag{f.with}
		other, err = e.newHost(ctx)
		e.dirs = saved
		if err != nil {
			return err
		}
		defer other.Close(ctx)
	}
	var lines []replayLine
	var sum replaySummary
	for _, r := range receipts {
		l := replayOne(ctx, h, other, r)
		switch l.Status {
		case "match":
			sum.Match++
		case "mismatch":
			sum.Mismatch++
		default:
			sum.NotReplayable++
		}
		if l.With != nil {
			switch l.With.Status {
			case "same":
				sum.Same++
			case "differs":
				sum.Differs++
			}
		}
		lines = append(lines, l)
	}
	if e.asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(map[string]any{"results": lines, "summary": sum}); err != nil {
			return err
		}
	} else {
		printReplay(e, lines, sum, f.with != "")
	}
	if sum.Mismatch > 0 || sum.NotReplayable > 0 || sum.Differs > 0 {
		return exitError{1}
	}
	return nil
}

// replayReceipts loads the receipts args (or --since) names.
func replayReceipts(ctx context.Context, st *store.Store, f *replayFlags, args []string) ([]*receipt.Receipt, error) {
	var out []*receipt.Receipt
	if f.since > 0 {
		for r, err := range st.Receipts(ctx, f.tenant, f.since) {
			if err != nil {
				return nil, err
			}
			if len(out) == f.limit {
				break
			}
			out = append(out, r)
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("tenant %s has no receipt from sequence number %d on", f.tenant, f.since)
		}
		return out, nil
	}
	if len(args) > f.limit {
		return nil, usageError{fmt.Sprintf("replay: %d receipts named, --limit is %d", len(args), f.limit)}
	}
	for _, a := range args {
		var r *receipt.Receipt
		var err error
		if seq, perr := strconv.ParseUint(a, 10, 64); perr == nil && len(a) < 16 {
			r, err = st.Receipt(ctx, f.tenant, seq)
		} else {
			r, err = st.ReceiptByCall(ctx, f.tenant, a)
		}
		if errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("tenant %s has no receipt %s", f.tenant, a)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// replayOne replays r on h and, with other, runs other's version of the
// tool on the same call.
func replayOne(ctx context.Context, h, other *host.Host, r *receipt.Receipt) replayLine {
	l := replayLine{Tenant: r.Tenant, Seq: r.Seq, CallID: r.CallID, Tool: r.Tool + "@" + r.ToolVersion, CallDigest: r.OutputDigest}
	got, err := h.Replay(ctx, r, host.ReplayOptions{})
	var original []byte
	switch {
	case err != nil:
		l.Status, l.Reason = "not-replayable", err.Error()
		// The recorded version's output, when the receipt kept it, is
		// still what another version is compared with.
		original = keptOutput(r)
	default:
		l.OutputDigest, l.Diverged = got.OutputDigest, got.Diverged
		original = got.Envelope.Output
		if got.Match {
			l.Status = "match"
		} else {
			l.Status = "mismatch"
			l.Diff = outputDiff(got.Original, got.Envelope.Output, "call", "replay")
		}
	}
	if other == nil {
		return l
	}
	w := &withLine{}
	l.With = w
	ng, err := other.Replay(ctx, r, host.ReplayOptions{AnyVersion: true})
	if err != nil {
		w.Status, w.Reason = "not-replayable", err.Error()
		return l
	}
	w.Version, w.OutputDigest, w.Grant = ng.Version, ng.OutputDigest, ng.GrantChanged
	switch {
	case original == nil:
		w.Status, w.Reason = "not-replayable", "the recorded version's output is not at hand to compare with"
	case receipt.Digest(original) == ng.OutputDigest:
		w.Status = "same"
	default:
		w.Status = "differs"
		w.Diff = outputDiff(original, ng.Envelope.Output, r.ToolVersion, ng.Version)
	}
	return l
}

// keptOutput is the call's output as its receipt's inputs kept it, or
// nil.
func keptOutput(r *receipt.Receipt) []byte {
	var pl struct {
		Output json.RawMessage `json:"output"`
	}
	if json.Unmarshal(r.Inputs, &pl) != nil || len(pl.Output) == 0 || receipt.Digest(pl.Output) != r.OutputDigest {
		return nil
	}
	return pl.Output
}

// outputDiff is a unified diff of two JSON outputs, each indented so
// that the diff is by field; "" when a is not at hand.
func outputDiff(a, b []byte, la, lb string) string {
	if a == nil {
		return "(the call's output was not kept: only its digest is compared)"
	}
	d, ok := unidiff.Unified(indentJSON(a), indentJSON(b), la, lb, 3, maxDiffEdits)
	if !ok {
		return fmt.Sprintf("(the outputs differ in more than %d lines)", maxDiffEdits)
	}
	return d.Diff
}

// indentJSON indents a JSON value, one line per field; a JSON string is
// shown as its text, line by line.
func indentJSON(b []byte) string {
	var s string
	if json.Unmarshal(b, &s) == nil {
		if !strings.HasSuffix(s, "\n") {
			s += "\n"
		}
		return s
	}
	var v any
	if json.Unmarshal(b, &v) != nil {
		return string(b) + "\n"
	}
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return string(b) + "\n"
	}
	return string(out) + "\n"
}

// printReplay prints the outcomes for people.
func printReplay(e *env, lines []replayLine, sum replaySummary, with bool) {
	for _, l := range lines {
		head := fmt.Sprintf("receipt %d (%s) %s: ", l.Seq, l.Tenant, l.Tool)
		switch l.Status {
		case "match":
			fmt.Fprintf(e.stdout, "%smatch (output sha256 %s)\n", head, l.OutputDigest)
		case "mismatch":
			fmt.Fprintf(e.stdout, "%sMISMATCH: the replay's output sha256 is %s, the call's %s\n", head, l.OutputDigest, l.CallDigest)
			if l.Diff != "" {
				fmt.Fprint(e.stdout, indentBlock(l.Diff))
			}
		default:
			fmt.Fprintf(e.stdout, "%snot replayable: %s\n", head, l.Reason)
		}
		if l.Diverged != "" {
			fmt.Fprintf(e.stdout, "  the replay diverged from the record: %s\n", l.Diverged)
		}
		if w := l.With; w != nil {
			switch w.Status {
			case "same":
				fmt.Fprintf(e.stdout, "  --with %s: same output\n", w.Version)
			case "differs":
				fmt.Fprintf(e.stdout, "  --with %s: output differs\n", w.Version)
				fmt.Fprint(e.stdout, indentBlock(w.Diff))
			default:
				fmt.Fprintf(e.stdout, "  --with: not replayable: %s\n", w.Reason)
			}
			if w.Grant != "" {
				fmt.Fprintf(e.stdout, "  --with: its grant differs: %s\n", w.Grant)
			}
		}
	}
	fmt.Fprintf(e.stdout, "%d replayed: %d match, %d mismatch, %d not replayable", len(lines), sum.Match, sum.Mismatch, sum.NotReplayable)
	if with {
		fmt.Fprintf(e.stdout, "; the other version: %d same, %d differ", sum.Same, sum.Differs)
	}
	fmt.Fprintln(e.stdout)
}

// indentBlock indents every line of s by four spaces.
func indentBlock(s string) string {
	var b strings.Builder
	for _, line := range unidiff.SplitLines(s) {
		b.WriteString("    " + line)
	}
	if !strings.HasSuffix(s, "\n") {
		b.WriteString("\n")
	}
	return b.String()
}
