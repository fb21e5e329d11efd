// Package profile reads agent profiles: what one agent is (its system
// prompt, tool-calling mode, iteration cap and model) and which tools it
// sees (tool_ids_inventory: tool IDs and globs such as "fs:*" or
// "mcp:github.*"). A tool outside the inventory is invisible to that
// agent, and a call to it is UNKNOWN_TOOL.
package profile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/schema"
)

// maxBytes bounds a profile file.
const maxBytes = 256 << 10

// MaxIterations bounds a profile's maxIterations.
const MaxIterations = 1000

// Profile is one parsed agent profile (agent_profile.json or
// <id>.profile.json).
type Profile struct {
	ID            string   `json:"id"`
	Name          string   `json:"name,omitempty"`
	Description   string   `json:"description,omitempty"`
	SystemPrompt  string   `json:"systemPrompt,omitempty"`
	Mode          string   `json:"mode,omitempty"`
	MaxIterations int      `json:"maxIterations,omitempty"`
	Model         *Model   `json:"model,omitempty"`
	Inventory     []string `json:"tool_ids_inventory"`
	// Path is the file the profile was read from.
	Path string `json:"-"`
}

// Model names the provider and model an agent uses.
type Model struct {
	Provider  string `json:"provider"`
	BaseURL   string `json:"baseUrl,omitempty"`
	Name      string `json:"name,omitempty"`
	APIKeyEnv string `json:"apiKeyEnv,omitempty"`
	// Replay is a replay provider's transcript, relative to the profile.
	Replay string `json:"replay,omitempty"`
	// Stream asks the provider for streamed answers, so that a client
	// sees the text as it comes.
	Stream bool `json:"stream,omitempty"`
}

// Load reads and checks the profile at path.
func Load(path string) (*Profile, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", path, err)
	}
	if fi.Size() > maxBytes {
		return nil, fmt.Errorf("profile %s: %d bytes; the limit is %d", path, fi.Size(), maxBytes)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", path, err)
	}
	p, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", path, err)
	}
	p.Path = path
	return p, nil
}

// Parse parses and checks a profile: unknown fields, an unknown mode or
// provider, a bad iteration cap and an inventory entry that is neither a
// tool ID nor a glob of one are errors.
func Parse(data []byte) (*Profile, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	p := &Profile{}
	if err := dec.Decode(p); err != nil {
		return nil, fmt.Errorf("invalid profile JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("invalid profile JSON: more than one value")
	}
	if err := manifest.ValidID("profile:" + p.ID); err != nil {
		return nil, fmt.Errorf("id %q: want lower-case letters, digits, '.', '_' and '-', starting with a letter", p.ID)
	}
	switch p.Mode {
	case "", "native", "action", "router", "code":
	default:
		return nil, fmt.Errorf("mode %q: want native, action, router or code", p.Mode)
	}
	if p.MaxIterations < 0 || p.MaxIterations > MaxIterations {
		return nil, fmt.Errorf("maxIterations %d: want 1 to %d (0 for the default)", p.MaxIterations, MaxIterations)
	}
	if m := p.Model; m != nil {
		switch m.Provider {
		case "openai", "anthropic", "gemini":
			if m.Replay != "" {
				return nil, fmt.Errorf("model.replay is for the replay provider, not %s", m.Provider)
			}
		case "replay":
			if m.Replay == "" {
				return nil, errors.New("model: the replay provider needs model.replay (a transcript file)")
			}
		default:
			return nil, fmt.Errorf("model.provider %q: want openai, anthropic, gemini or replay", m.Provider)
		}
	}
	if len(p.Inventory) == 0 {
		return nil, errors.New("tool_ids_inventory is empty: list the tools this agent may see (IDs or globs such as \"fs:*\")")
	}
	for i, e := range p.Inventory {
		if err := checkEntry(e); err != nil {
			return nil, fmt.Errorf("tool_ids_inventory[%d]: %w", i, err)
		}
	}
	return p, nil
}

// checkEntry accepts a tool ID or a glob of one: '*' for any run of
// characters, '?' for one.
func checkEntry(e string) error {
	if !strings.ContainsAny(e, "*?") {
		if err := manifest.ValidID(e); err != nil {
			return err
		}
		return nil
	}
	for _, r := range e {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', strings.ContainsRune(".:_-*?", r):
		default:
			return fmt.Errorf("%q: a glob holds lower-case letters, digits, '.', ':', '_', '-', '*' and '?'", e)
		}
	}
	return nil
}

// Resolve returns the IDs among ids that the inventory selects, sorted.
// An entry that selects nothing is an error naming the nearest IDs.
func (p *Profile) Resolve(ids []string) ([]string, error) {
	set := map[string]bool{}
	var missing []string
	for _, e := range p.Inventory {
		n := 0
		for _, id := range ids {
			if Match(e, id) {
				set[id] = true
				n++
			}
		}
		if n == 0 {
			msg := fmt.Sprintf("%q matches no loaded tool", e)
			if near := schema.Suggest(strings.Trim(e, "*?"), ids, 3); len(near) > 0 {
				msg += " (nearest: " + strings.Join(near, ", ") + ")"
			}
			missing = append(missing, msg)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("profile %s: tool_ids_inventory: %s", p.ID, strings.Join(missing, "; "))
	}
	out := make([]string, 0, len(set))
	for id := range set {
		out = append(out, id)
	}
	sort.Strings(out)
	return out, nil
}

// Match reports whether the inventory entry e selects id: '*' matches any
// run of characters (':' and '.' included), '?' one character. Linear in
// len(e) × len(id) at worst.
func Match(e, id string) bool {
	// Iterative glob with single-star backtracking.
	pi, si := 0, 0
	star, mark := -1, 0
	for si < len(id) {
		switch {
		case pi < len(e) && (e[pi] == '?' || e[pi] == id[si]):
			pi++
			si++
		case pi < len(e) && e[pi] == '*':
			star, mark = pi, si
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(e) && e[pi] == '*' {
		pi++
	}
	return pi == len(e)
}
