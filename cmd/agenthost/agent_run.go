package main

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/agenthost/agenthost/host/agent"
	"github.com/agenthost/agenthost/host/llm"
	"github.com/agenthost/agenthost/host/profile"
)

// agentFlags are the flags of `run`.
type agentFlags struct {
	provider, baseURL, model, apiKeyEnv, replay, mode, system string
	maxIterations                                             int
	stream                                                    bool
}

func runCommand() command {
	return command{
		name: "run", usage: "run [--profile FILE] [--provider openai|anthropic|gemini|replay] [--model M] [--mode native|action|router|code] [--json] [TASK|-]",
		summary: "run the agent loop on a task: progress on stderr, the answer on stdout",
		flags: func(fs *flag.FlagSet, e *env) {
			a := &e.agent
			fs.StringVar(&a.provider, "provider", "openai", "`PROVIDER`: openai (any Chat Completions API: OpenAI, Ollama, vLLM…), anthropic (the Messages API), gemini (the Gemini API) or replay (a JSONL transcript)")
			fs.StringVar(&a.baseURL, "base-url", "", "the provider's API root (default https://api.openai.com/v1, https://api.anthropic.com or https://generativelanguage.googleapis.com/v1beta)")
			fs.StringVar(&a.model, "model", "", "the model name")
			fs.StringVar(&a.apiKeyEnv, "api-key-env", "", "the environment `VARIABLE` holding the API key (default OPENAI_API_KEY, ANTHROPIC_API_KEY or GEMINI_API_KEY; - for a server that needs none)")
			fs.BoolVar(&a.stream, "stream", false, "ask for a streamed answer (server-sent events): the text shows as it comes")
			fs.StringVar(&a.replay, "replay", "", "replay: the transcript `FILE` (JSONL, one model turn per line)")
			fs.StringVar(&a.mode, "mode", "native", "`MODE`: native (provider tool calling), action (the ACTION protocol in text), router (one tools tool with describe and call) or code (one run_code tool: the model writes a program that calls the tools)")
			fs.StringVar(&a.system, "system", "", "a system prompt")
			fs.IntVar(&a.maxIterations, "max-iterations", agent.DefaultMaxIterations, "the cap on model turns (then status partial)")
			fs.BoolVar(&e.asJSON, "json", false, `print {"status","answer","iterations","steps"} on stdout`)
			profileFlag(fs, e)
			approveFlagSet(fs, e)
		},
		run: runAgent,
	}
}

func runAgent(ctx context.Context, e *env, args []string) error {
	if len(args) > 1 {
		return usageError{"run takes one TASK (or - to read it from stdin)"}
	}
	task := "Use the tools as needed to help the user."
	if len(args) == 1 {
		b, err := e.readInput(args[0], true)
		if err != nil {
			return err
		}
		task = strings.TrimSpace(string(b))
	}
	prof, err := e.loadProfile()
	if err != nil {
		return err
	}
	a := e.agent
	if prof != nil {
		a = e.withProfile(a, prof)
	}
	p, err := newProvider(a)
	if err != nil {
		return err
	}
	stopApprovals, err := e.startApprovals(ctx) // the policy's approve rules ask here (approve.go)
	if err != nil {
		return err
	}
	defer stopApprovals()
	// llm:complete lets workflows the agent calls nest model calls.
	h, err := e.newHost(ctx, agent.CompleteTool(p, a.model))
	if err != nil {
		return err
	}
	defer h.Close(ctx)
	var ids []string
	if prof != nil {
		tools, err := visibleTools(h, prof)
		if err != nil {
			return err
		}
		for _, t := range tools {
			ids = append(ids, t.ToolID)
		}
	}
	progress := e.messages()
	streamed := false
	res, err := agent.Run(ctx, h, task, agent.Options{
		Provider: p, Model: a.model, Mode: a.mode, SystemPrompt: a.system, MaxIterations: a.maxIterations, Tools: ids,
		OnEvent: func(ev agent.Event) {
			switch ev.Kind {
			case "delta":
				// Streamed text shows with the progress as it comes; the
				// answer is still printed whole on stdout.
				fmt.Fprint(progress, ev.Text)
				streamed = true
			case "model":
				if streamed {
					fmt.Fprintln(progress)
					streamed = false
				}
				fmt.Fprintf(progress, "agenthost: model turn (%s)\n", ev.Duration.Round(1e5))
			case "tool":
				fmt.Fprintf(progress, "agenthost:   tool %s: %s (%s)\n", ev.Tool, ev.Status, ev.Duration.Round(1e5))
			case "code_step":
				fmt.Fprintf(progress, "agenthost:     program call %s: %s (%s)\n", ev.Tool, ev.Status, ev.Duration.Round(1e5))
			}
		},
	})
	if err != nil {
		return usageError{err.Error()}
	}
	if e.asJSON {
		if err := e.printJSON(res); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(e.stdout, res.Answer)
		if res.Error != "" {
			fmt.Fprintf(e.messages(), "agenthost: run %s: %s\n", res.Status, res.Error)
		}
	}
	if res.Status != "done" {
		return exitError{1}
	}
	return nil
}

// withProfile fills the agent flags not given on the command line from
// the profile (the command line wins).
func (e *env) withProfile(a agentFlags, p *profile.Profile) agentFlags {
	set := func(name string, dst *string, v string) {
		if !e.set[name] && v != "" {
			*dst = v
		}
	}
	set("system", &a.system, p.SystemPrompt)
	set("mode", &a.mode, p.Mode)
	if !e.set["max-iterations"] && p.MaxIterations > 0 {
		a.maxIterations = p.MaxIterations
	}
	if m := p.Model; m != nil {
		set("provider", &a.provider, m.Provider)
		set("base-url", &a.baseURL, m.BaseURL)
		set("model", &a.model, m.Name)
		set("api-key-env", &a.apiKeyEnv, m.APIKeyEnv)
		if m.Replay != "" && !filepath.IsAbs(m.Replay) {
			m.Replay = filepath.Join(filepath.Dir(p.Path), m.Replay)
		}
		set("replay", &a.replay, m.Replay)
		if !e.set["stream"] && m.Stream {
			a.stream = true
		}
	}
	return a
}

// newProvider builds the model provider of the agent settings a (flags,
// or a profile's model): the one place both `run` and `serve` make one.
func newProvider(a agentFlags) (llm.Provider, error) {
	switch a.provider {
	case "replay":
		if a.replay == "" {
			return nil, usageError{"the replay provider needs a transcript (--replay FILE, or model.replay)"}
		}
		r, err := llm.NewReplay(a.replay)
		if err != nil {
			return nil, usageError{err.Error()}
		}
		return r, nil
	case "openai", "anthropic", "gemini":
		if a.model == "" {
			return nil, usageError{"the " + a.provider + " provider needs a model (--model, or model.name)"}
		}
		keyEnv := a.apiKeyEnv
		switch {
		case keyEnv == "-":
			keyEnv = ""
		case keyEnv == "" && a.provider == "openai":
			keyEnv = "OPENAI_API_KEY"
		}
		var p llm.Provider
		var err error
		switch a.provider {
		case "openai":
			base := a.baseURL
			if base == "" {
				base = "https://api.openai.com/v1"
			}
			p, err = llm.NewOpenAI(llm.OpenAIConfig{BaseURL: base, APIKeyEnv: keyEnv, Stream: a.stream})
		case "anthropic":
			if a.apiKeyEnv == "-" {
				return nil, usageError{"--provider anthropic needs an API key"}
			}
			p, err = llm.NewAnthropic(llm.AnthropicConfig{BaseURL: a.baseURL, APIKeyEnv: keyEnv, Stream: a.stream})
		default:
			if a.apiKeyEnv == "-" {
				return nil, usageError{"--provider gemini needs an API key"}
			}
			p, err = llm.NewGemini(llm.GeminiConfig{BaseURL: a.baseURL, APIKeyEnv: keyEnv, Stream: a.stream})
		}
		if err != nil {
			return nil, usageError{err.Error()}
		}
		return p, nil
	}
	return nil, usageError{"--provider must be openai, anthropic, gemini or replay"}
}
