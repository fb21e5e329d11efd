package host

import (
	"github.com/agenthost/agenthost/host/action"
	"github.com/agenthost/agenthost/host/observation"
	"github.com/agenthost/agenthost/host/policy"
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
}
