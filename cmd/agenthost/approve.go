package main

import (
	"bufio"
	"context"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"path"
	"strings"

	"golang.org/x/term"

	"github.com/agenthost/agenthost/host/approval"
)

// approveFlags are run's and exec's answers to the policy's approve
// rules: the terminal asks, --approve answers for scripts.
type approveFlags struct {
	tools   multiFlag // --approve GLOB: pre-approved tools
	minutes int       // --approve-minutes: how long [a] lasts
	key     string    // serve's --approval-key: the FILE whose key signs approval states
	broker  *approval.Broker
}

// serveApprovals makes the one broker serve's tenants share, so that the
// bounds on waiting calls hold for the whole server; its requests are
// answered over HTTP, in the console, and by the MCP and AG-UI clients.
//
// With --approval-key the states of the stateless round trips (an MCP
// client's input_required retry) are signed with the key in that file,
// so that every instance sharing it takes a retry that reaches another
// one; without it each process signs with a random key of its own.
func (e *env) serveApprovals() error {
	var opts approval.Options
	if e.approve.key != "" {
		key, err := readKeyFile(e.approve.key)
		if err != nil {
			return usageError{fmt.Sprintf("--approval-key: %v", err)}
		}
		opts.Key = key
	}
	b, err := approval.NewBroker(opts)
	if err != nil {
		if e.approve.key != "" {
			return usageError{fmt.Sprintf("--approval-key: %v", err)}
		}
		return err
	}
	e.approve.broker = b
	return nil
}

// approveFlagSet adds --approve and --approve-minutes.
func approveFlagSet(fs *flag.FlagSet, e *env) {
	fs.Var(&e.approve.tools, "approve", "pre-approve (once each) the calls of tools matching `GLOB` that the policy's approve rules make wait, for scripts with no terminal to ask on (repeatable; \"*\": every tool)")
	fs.IntVar(&e.approve.minutes, "approve-minutes", approval.DefaultMinutes, "how many `MINUTES` an [a] answer at the terminal's question allows the same tool and conditions")
}

// startApprovals makes the approval broker of run and exec and answers
// its requests: --approve globs first, then the person at the terminal
// (/dev/tty) when stdin and stdout are terminals; otherwise a request is
// denied with a message saying how to approve it. The returned function
// stops answering.
func (e *env) startApprovals(ctx context.Context) (func(), error) {
	for _, g := range e.approve.tools {
		if _, err := path.Match(g, ""); err != nil {
			return nil, usageError{fmt.Sprintf("--approve %q: %v", g, err)}
		}
	}
	if e.approve.minutes < 1 || e.approve.minutes > approval.DefaultMaxMinutes {
		return nil, usageError{fmt.Sprintf("--approve-minutes must be between 1 and %d", approval.DefaultMaxMinutes)}
	}
	b, err := approval.NewBroker(approval.Options{})
	if err != nil {
		return nil, err
	}
	events, stop, err := b.Subscribe("")
	if err != nil {
		return nil, err
	}
	e.approve.broker = b
	var tty io.ReadWriteCloser
	if isTTY(e.stdin) && isTTY(e.stdout) {
		if f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0); err == nil {
			tty = f
		}
	}
	who := "terminal:" + currentUser()
	done := make(chan struct{})
	go func() {
		defer close(done)
		var in *bufio.Reader
		if tty != nil {
			in = bufio.NewReader(tty)
		}
		for ev := range events {
			if ev.Kind != approval.EventPending {
				continue
			}
			req := ev.Request
			switch {
			case matchesAny(e.approve.tools, req.Tool):
				_, _, _ = b.Decide(req.Tenant, req.ID, approval.AllowOnce, 0, "flag:--approve")
			case tty == nil:
				_, _, _ = b.DecideNote(req.Tenant, req.ID, approval.Deny, 0, "agenthost",
					fmt.Sprintf("no terminal to ask on (stdin and stdout must be terminals); run again at a terminal, or pass --approve '%s' to approve such calls", req.Tool))
			default:
				e.askTerminal(ctx, b, tty, in, req, who)
			}
		}
	}()
	return func() {
		stop()
		<-done
		if tty != nil {
			_ = tty.Close()
		}
	}, nil
}

// askTerminal shows a request on the terminal and records the answer:
// y once, a for --approve-minutes, n (or anything else) deny.
func (e *env) askTerminal(ctx context.Context, b *approval.Broker, tty io.Writer, in *bufio.Reader, req approval.Request, who string) {
	var s strings.Builder
	fmt.Fprintf(&s, "\nagenthost: the policy asks for your approval of a call\n")
	fmt.Fprintf(&s, "  tool:      %s\n", escapeText(req.Tool))
	fmt.Fprintf(&s, "  arguments: %s\n", escapeText(clip(string(req.Arguments), 2000)))
	g := req.Grant
	fmt.Fprintf(&s, "  grant:     read %s; write %s; hosts %s; env %s; credentials %s; timeout %d ms\n",
		list(g.Read), list(g.Write), list(g.Hosts), list(g.Env), list(g.Credentials), g.TimeoutMs)
	risks := "the tool itself"
	if len(req.Risks) > 0 {
		risks = strings.Join(req.Risks, ", ")
	}
	fmt.Fprintf(&s, "  risks:     %s\n", escapeText(risks))
	fmt.Fprintf(&s, "  expires:   %s\n", req.Expires.Local().Format("15:04:05"))
	fmt.Fprintf(&s, "Allow? [y] once, [a] for %d minutes, [n] deny: ", e.approve.minutes)
	_, _ = io.WriteString(tty, s.String())
	line, err := in.ReadString('\n')
	if err != nil && line == "" {
		_, _, _ = b.Decide(req.Tenant, req.ID, approval.Deny, 0, who)
		return
	}
	var rec approval.Record
	var first bool
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		rec, first, _ = b.Decide(req.Tenant, req.ID, approval.AllowOnce, 0, who)
	case "a", "always":
		rec, first, _ = b.Decide(req.Tenant, req.ID, approval.Allow, e.approve.minutes, who)
	default:
		rec, first, _ = b.Decide(req.Tenant, req.ID, approval.Deny, 0, who)
	}
	if !first && rec.Decision != "" {
		fmt.Fprintf(tty, "agenthost: too late: the request ended as %s\n", rec.Decision)
	}
}

func list(v []string) string {
	if len(v) == 0 {
		return "-"
	}
	return escapeText(strings.Join(v, ", "))
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func matchesAny(globs []string, id string) bool {
	for _, g := range globs {
		if ok, _ := path.Match(g, id); ok {
			return true
		}
	}
	return false
}

// isTTY reports whether v is a terminal: a file with terminal
// attributes (a character device such as /dev/null is not one).
func isTTY(v any) bool {
	f, ok := v.(*os.File)
	if !ok {
		return false
	}
	return term.IsTerminal(int(f.Fd()))
}

func currentUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "unknown"
}

// readKeyFile reads a key file: raw bytes, or hex text (surrounding
// white space ignored), as --credential-key takes them.
func readKeyFile(name string) ([]byte, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	if h, err := hex.DecodeString(strings.TrimSpace(string(b))); err == nil {
		return h, nil
	}
	return b, nil
}
