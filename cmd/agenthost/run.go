package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/agenthost/agenthost/host/credential"
	"go.opentelemetry.io/otel/trace"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/host/receipt"
	"github.com/hashicorp/go-hclog"
)

// command is one subcommand: its flags are registered on fs, then run is
// called with the positional arguments.
type command struct {
	name    string
	usage   string
	summary string
	flags   func(fs *flag.FlagSet, e *env)
	// jsonOnly commands print JSON only (the JSON encoder escapes control
	// characters); the others' stdout goes through a terminal escaper.
	jsonOnly bool
	// serves says the command serves until it is stopped (serve, worker,
	// mcp); the others run once and exit (see oneShotGC).
	serves bool
	run    func(ctx context.Context, e *env, args []string) error
}

// oneShotGCPercent is the garbage collector's target for a command that
// runs once and exits, unless GOGC is set. Such a command's work is
// mostly its first tool call, which allocates heavily while the module
// is decoded and compiled; collecting at the default target (100) cost
// about 15 % of `agenthost invoke`. The heap of a short-lived process
// may grow larger in exchange.
const oneShotGCPercent = 400

// tuneGC is set by main: the process is the CLI's own, so a command that
// runs once may set the collector's target (tests running commands in
// their process keep theirs).
var tuneGC bool

// env carries what every command shares: streams, global flags, and the
// host built from them on demand.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer

	dirs     multiFlag
	policy   string
	cacheDir string
	logLevel string
	logJSON  bool
	log      hclog.Logger

	// per-command flags
	asJSON       bool
	namespace    string
	tag          string
	format       string
	failOn       string
	onFailure    string
	watch        bool
	agent        agentFlags
	olderThan    time.Duration
	maxSize      string
	compact      bool
	writeDigests bool
	runExamples  bool
	profile      string
	out, key     string
	trusted      string
	diff         string
	serve        serveFlags
	worker       workerFlags
	noDirs       bool
	// issuer, tenant and workspace (replacing the policy's) are set by
	// serve for the hosts it builds.
	issuer    credential.Issuer
	protected []string // files no MCP server's process may reach (serve's)
	tenant    string
	workspace string
	tracer    trace.Tracer
	receipts  receipt.Sink // serve's receipt recorder (receipts.go)
	approve   approveFlags // run's and exec's approvals (approve.go)
	storePath string
	// set holds the flags given on the command line (a profile's values
	// yield to them).
	set map[string]bool
}

// commands is the command table, in help order.
func commands() []command {
	return []command{
		listCommand(), describeCommand(), invokeCommand(), parseCommand(),
		execCommand(), auditCommand(), promptCommand(), validateCommand(),
		runCommand(), schemaCommand(), mcpCommand(), mcpImportCommand(), serveCommand(), workerCommand(), testCommand(), newCommand(), buildCommand(), cacheCommand(),
		packCommand(), signCommand(), verifyCommand(), pushCommand(), pullCommand(), versionCommand(),
		replayCommand(), receiptsCommand(),
	}
}

// usageError is bad command-line usage: exit 2, with a hint.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// exitError carries an exit code for a result already printed.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

// configError is an unreadable or invalid policy file: exit 2.
type configError struct{ err error }

func (e configError) Error() string { return e.err.Error() }
func (e configError) Unwrap() error { return e.err }

// run is the whole CLI; main only maps its result to os.Exit.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr}
	err := dispatch(ctx, e, args)
	return exitCode(err, e.messages())
}

// messages is where the CLI's own messages go: plain "agenthost: ..."
// lines on stderr, or JSON log lines with --log-json, so that every stderr
// line is JSON then.
func (e *env) messages() io.Writer {
	if !e.logJSON {
		return lineEscaper{e.stderr}
	}
	return jsonLines{hclog.New(&hclog.LoggerOptions{Name: "agenthost", Level: hclog.Error, Output: e.stderr, JSONFormat: true})}
}

// lineEscaper escapes control characters in each write (whole lines).
type lineEscaper struct{ w io.Writer }

func (l lineEscaper) Write(p []byte) (int, error) {
	if _, err := io.WriteString(l.w, escapeText(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// jsonLines turns each write into one error-level JSON log line, dropping
// the "agenthost: " prefix the plain form carries.
type jsonLines struct{ log hclog.Logger }

func (j jsonLines) Write(p []byte) (int, error) {
	if msg := strings.TrimSpace(strings.TrimPrefix(string(p), "agenthost: ")); msg != "" {
		j.log.Error(msg)
	}
	return len(p), nil
}

// exitCode is the one place that maps errors to exit codes.
func exitCode(err error, stderr io.Writer) int {
	var ue usageError
	var ee exitError
	var ce configError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "agenthost: %s\nRun 'agenthost help' for usage.\n", ue.msg)
		return 2
	case errors.As(err, &ce):
		fmt.Fprintf(stderr, "agenthost: %s\n", ce.err)
		return 2
	}
	fmt.Fprintf(stderr, "agenthost: %s\n", err)
	return 1
}

func dispatch(ctx context.Context, e *env, args []string) error {
	// Global flags may come before the command: parse them up to the first
	// positional argument, which names the command.
	gfs := flag.NewFlagSet("agenthost", flag.ContinueOnError)
	gfs.SetOutput(io.Discard)
	e.globalFlags(gfs)
	if err := gfs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printHelp(e.stdout)
			return nil
		}
		return usageError{err.Error()}
	}
	args = gfs.Args()
	if len(args) == 0 || args[0] == "help" {
		printHelp(e.stdout)
		if len(args) == 0 {
			return usageError{"no command given"}
		}
		return nil
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		if tuneGC && !c.serves && os.Getenv("GOGC") == "" {
			debug.SetGCPercent(oneShotGCPercent)
		}
		fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		e.globalFlags(fs)
		if c.flags != nil {
			c.flags(fs, e)
		}
		pos, err := parseInterleaved(fs, args[1:])
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(e.stdout, "usage: agenthost %s\n\n%s\n\nflags:\n", c.usage, c.summary)
			printFlags(e.stdout, fs)
			return nil
		}
		if err != nil {
			return usageError{fmt.Sprintf("%s: %s", c.name, err)}
		}
		e.set = map[string]bool{}
		fs.Visit(func(f *flag.Flag) { e.set[f.Name] = true })
		lvl := hclog.LevelFromString(e.logLevel)
		if lvl == hclog.NoLevel {
			return usageError{fmt.Sprintf("unknown log level %q", e.logLevel)}
		}
		logOut := e.stderr
		if !e.logJSON {
			logOut = lineEscaper{e.stderr}
		}
		e.log = hclog.New(&hclog.LoggerOptions{Name: "agenthost", Level: lvl, Output: logOut, JSONFormat: e.logJSON})
		if !e.asJSON && !c.jsonOnly && !(c.name == "audit" && e.format == "json") {
			// Human-readable output: text from manifests and tools must
			// not drive the terminal.
			tw := &termWriter{w: e.stdout}
			e.stdout = tw
			defer tw.Flush()
		}
		return c.run(ctx, e, pos)
	}
	return usageError{fmt.Sprintf("unknown command %q", args[0])}
}

// globalFlags registers the flags every command accepts, before or after
// the command name.
func (e *env) globalFlags(fs *flag.FlagSet) {
	fs.Var(&e.dirs, "dir", "toolpack `DIR` (repeatable; default ./toolpacks)")
	fs.StringVar(&e.policy, "policy", e.policy, "operator policy `FILE` (JSON or YAML)")
	fs.StringVar(&e.cacheDir, "cache-dir", e.cacheDir, "the host's cache `DIR` (default $XDG_CACHE_HOME/agenthost, else ~/.cache/agenthost)")
	if e.logLevel == "" {
		e.logLevel = "warn"
	}
	fs.StringVar(&e.logLevel, "log-level", e.logLevel, "`LEVEL`: trace, debug, info, warn (default), error, off")
	fs.BoolVar(&e.logJSON, "log-json", e.logJSON, "log as JSON lines")
}

// printFlags lists a flag set the way the docs spell flags: --name.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if name != "" {
			line += " " + name
		}
		fmt.Fprintf(w, "%-28s %s\n", line, usage)
	})
}

// parseInterleaved lets flags come before or after positional arguments.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func printHelp(w io.Writer) {
	fmt.Fprintln(w, "agenthost hosts LLM-agent tools in a WebAssembly sandbox.")
	fmt.Fprintln(w, "\nusage: agenthost [global flags] <command> [flags] [args]\n\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-40s %s\n", c.usage, c.summary)
	}
	fmt.Fprintln(w, "\nglobal flags (before or after the command): --dir DIR (repeatable, default ./toolpacks), --policy FILE,\n  --cache-dir DIR, --log-level LEVEL, --log-json")
	fmt.Fprintln(w, "exit codes: 0 success, 1 tool or call failure, 2 usage or policy error")
}

// loadPolicy reads --policy, or returns the built-in default.
func (e *env) loadPolicy() (*policy.Policy, error) {
	if e.policy == "" {
		return policy.Default(), nil
	}
	p, err := policy.Load(e.policy)
	if err != nil {
		return nil, configError{err}
	}
	return p, nil
}

func (e *env) toolDirs() []string {
	if e.noDirs {
		return nil
	}
	if len(e.dirs) == 0 {
		return []string{"toolpacks"}
	}
	return e.dirs
}

// newHostNoDirs builds a host with no toolpack folder (for commands about
// the policy itself).
func (e *env) newHostNoDirs(ctx context.Context) (*host.Host, error) {
	e.noDirs = true
	defer func() { e.noDirs = false }()
	return e.newHost(ctx)
}

// newHost builds a host from the global flags.
func (e *env) newHost(ctx context.Context, tools ...host.Tool) (*host.Host, error) {
	p, err := e.loadPolicy()
	if err != nil {
		return nil, err
	}
	if e.workspace != "" {
		p.Workspace = e.workspace
	}
	dirs := append([]string(nil), e.toolDirs()...)
	explicit := e.cacheDir
	if explicit == "" {
		explicit = p.CacheDir
	}
	for i, d := range dirs {
		switch {
		case strings.HasPrefix(d, ociPrefix):
			if dirs[i], err = e.ociDir(ctx, d, explicit); err != nil {
				return nil, err
			}
		case strings.HasSuffix(d, archiveSuffix):
			if dirs[i], err = e.archiveDir(d, explicit); err != nil {
				return nil, err
			}
		}
	}
	h, err := host.New(ctx, host.Options{Dirs: dirs, Policy: p, Logger: e.log, CacheDir: e.cacheDir, OnFailure: host.OnFailure(e.onFailure), Tools: tools,
		Credentials: e.issuer, Tenant: e.tenant, Tracer: e.tracer, Protected: e.protected, Receipts: e.receipts, Approvals: e.approve.broker})
	if err != nil {
		return nil, usageError{err.Error()}
	}
	return h, nil
}

// maxInput caps what a command reads from stdin or a file.
const maxInput = 64 << 20

// readInput returns the bytes an argument names: "-" is stdin, "@FILE" a
// file (when at is set) and anything else the argument itself. A file that
// cannot be read is a usage error.
func (e *env) readInput(arg string, at bool) ([]byte, error) {
	switch {
	case arg == "-":
		return readCapped(e.stdin)
	case at && strings.HasPrefix(arg, "@"):
		return readFile(arg[1:])
	}
	return []byte(arg), nil
}

func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, usageError{fmt.Sprintf("cannot read %s: %s", path, errors.Unwrap(err))}
	}
	defer f.Close()
	return readCapped(f)
}

func readCapped(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxInput+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxInput {
		return nil, usageError{fmt.Sprintf("input is larger than %d MiB", maxInput>>20)}
	}
	return b, nil
}

// printJSON writes v as indented JSON to stdout.
func (e *env) printJSON(v any) error {
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// multiFlag is a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string { return strings.Join(*m, ",") }

func (m *multiFlag) Set(v string) error {
	*m = append(*m, v)
	return nil
}
