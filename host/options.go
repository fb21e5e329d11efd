package host

import (
	"fmt"
	"github.com/agenthost/agenthost/host/credential"
	"go.opentelemetry.io/otel/trace"

	"github.com/agenthost/agenthost/host/action"
	"github.com/agenthost/agenthost/host/approval"
	"github.com/agenthost/agenthost/host/observation"
	"github.com/agenthost/agenthost/host/policy"
	"github.com/agenthost/agenthost/host/receipt"
	"github.com/hashicorp/go-hclog"
)

// Options configure a [Host]. The zero value means the documented defaults;
// New copies the struct and never writes back into it.
type Options struct {
	// Dirs are toolpack folders scanned recursively for *.tool.json.
	Dirs []string
	// Policy is the operator's policy; nil means policy.Default().
	Policy *policy.Policy
	// Logger receives host diagnostics; nil means a null logger.
	Logger hclog.Logger
	// CacheDir holds the compilation cache and per-tool $CACHE folders.
	// "" means the policy's cacheDir, else the user cache dir + "/agenthost".
	CacheDir string
	// LookupEnv reads host environment variables granted to tools; nil
	// means os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Action limits the ACTION parser (calls per block, bytes, depth).
	Action action.Options
	// Observation tunes the observation text.
	Observation observation.Options
	// OnFailure says what [Host.Exec] does with the calls of an ACTION
	// block after one fails: "" or OnFailureSkip marks them SKIPPED;
	// OnFailureContinue runs them (for independent calls).
	OnFailure OnFailure
	// Tools are Go tools (see Func) registered before Dirs are loaded, so
	// that manifests with handler "service-method" bind to them at load.
	Tools []Tool
	// Credentials mints the short-lived credentials that tools request
	// (securityContext.credentials). Without it such tools do not load.
	Credentials credential.Issuer
	// Tenant scopes minted credentials ("default" when empty) and is
	// recorded on traces.
	Tenant string
	// Tracer, when set, records an OpenTelemetry span per tool call
	// (execute_tool, with the generative-AI attributes). Nil costs
	// nothing.
	Tracer trace.Tracer
	// Protected are files of the application that no process the host
	// starts for an MCP server may reach (a server's auth file, its
	// credential key): a server whose folder, program folder or grant
	// holds one does not start. The policy and its MCP lock file always
	// are.
	Protected []string
	// CacheMaxBytes caps the host's cache folder: the host evicts the
	// least recently used entries above it when it starts (in the
	// background; Close waits for it). 0 means DefaultCacheMaxBytes; a
	// negative value means no cap.
	CacheMaxBytes int64
	// Receipts, when set, takes a signed-chain receipt of every call
	// (receipt.Recorder writes them to the history store; see
	// docs/RECEIPTS.md). Its owner closes it after the host, so that
	// nothing queued is lost. Nil builds no receipt and costs nothing.
	Receipts receipt.Sink
	// Approvals holds the calls that the policy's approve rules make wait
	// for a person's decision (see approval.Broker); one broker may serve
	// many hosts (tenants). Nil: the host makes its own when its policy
	// has approve rules.
	Approvals *approval.Broker
}

// OnFailure is what Exec does after a call of an ACTION block fails.
type OnFailure string

// The OnFailure values.
const (
	OnFailureSkip     OnFailure = "skip"
	OnFailureContinue OnFailure = "continue"
)

// validate checks the fields New cannot default.
func (o *Options) validate() error {
	switch o.OnFailure {
	case "", OnFailureSkip, OnFailureContinue:
	default:
		return fmt.Errorf("host options: OnFailure %q: want %q or %q", o.OnFailure, OnFailureSkip, OnFailureContinue)
	}
	return nil
}
