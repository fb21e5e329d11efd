package action

// Default limits of the protocol (nesting, calls and bytes per block), used when an [Options] field is
// zero or negative.
const (
	DefaultMaxCalls = 16
	DefaultMaxBytes = 1 << 20
	DefaultMaxDepth = 1000
)

// Options bounds a parse. The zero value means the defaults
// ([DefaultMaxCalls], [DefaultMaxBytes], [DefaultMaxDepth]); a zero or
// negative field takes its default.
type Options struct {
	// MaxCalls is the most tool calls one block may hold.
	MaxCalls int
	// MaxBytes is the largest ACTION block, start tag to end tag, in bytes.
	MaxBytes int
	// MaxDepth is the deepest element nesting inside the block; the tool
	// element is depth 1.
	MaxDepth int
}

func (o Options) withDefaults() Options {
	if o.MaxCalls <= 0 {
		o.MaxCalls = DefaultMaxCalls
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxDepth <= 0 {
		o.MaxDepth = DefaultMaxDepth
	}
	return o
}

// Call is one tool call of an ACTION block. Args values are string, []any or
// map[string]any, never coerced.
type Call struct {
	// Tool is the tool ID as written: the element's qualified name (form A)
	// or the text of <tool_id> (form B).
	Tool string `json:"tool"`
	// Args holds the arguments; never nil.
	Args map[string]any `json:"args"`
}

// Result is what [Parse] found in one LLM output.
type Result struct {
	// ResponseText is the text before the chosen ACTION block (or before the
	// fence that holds it), trimmed; the whole output, trimmed, when there is
	// no block.
	ResponseText string `json:"responseText"`
	// Calls are the tool calls in order; empty when there is no block.
	Calls []Call `json:"calls"`
	// Found reports that the output held an ACTION block (also true when
	// Parse fails on a malformed, cut-off or stray ACTION tag).
	Found bool `json:"-"`
	// Ignored notes what the parser skipped without failing: text directly
	// under ACTION, text after the block, attributes on an element with
	// text. For logs; never shown to the model as an error.
	Ignored []string `json:"-"`
	// IgnoredBlocks counts the further ACTION start tags after the chosen
	// block: only the first block runs, and a model that sent several is
	// told so, so it learns to send one.
	IgnoredBlocks int `json:"ignoredBlocks"`
}

// Parse extracts the first eligible ACTION block of output and returns its
// calls. Output without a block is a plain text reply:
// a Result with ResponseText and no calls, and a nil error.
//
// Every failure is an *abi.Error with Code MALFORMED_ACTION, a
// message that says what is wrong and how to fix it, and Details
// {"line": N, "column": N, "hint": "..."} locating the problem in the whole
// output (1-based; columns count characters). On failure Parse still
// returns a non-nil *Result carrying ResponseText.
func Parse(output string, opts Options) (*Result, error) {
	o := opts.withDefaults()
	res, perr := parse(output, o)
	if perr != nil {
		return res, perr.abi(output)
	}
	return res, nil
}
