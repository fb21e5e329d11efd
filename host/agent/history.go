package agent

import (
	"fmt"
	"strings"

	"github.com/agenthost/agenthost/host/llm"
)

// FitHistory keeps a conversation within budget (estimated tokens, about
// four characters each): when it is over, its oldest turns (a turn runs
// from a user message to the next) are replaced by one user message
// summarising them, so that the model still knows what was asked, which
// tools ran and what was answered. The latest turn is always kept whole,
// and a turn is never cut between a tool call and its result (providers
// refuse a result without its call).
func FitHistory(msgs []llm.Message, budget int) []llm.Message {
	if budget <= 0 || estimate(msgs) <= budget {
		return msgs
	}
	var turns [][]llm.Message
	for _, m := range msgs {
		if m.Role == llm.RoleUser || len(turns) == 0 {
			turns = append(turns, nil)
		}
		turns[len(turns)-1] = append(turns[len(turns)-1], m)
	}
	// Drop the oldest turns until the rest and the summary fit.
	cut := 0
	for cut < len(turns)-1 {
		cut++
		var rest []llm.Message
		for _, t := range turns[cut:] {
			rest = append(rest, t...)
		}
		sum := summarise(turns[:cut])
		if estimate(rest)+estimate([]llm.Message{sum}) <= budget || cut == len(turns)-1 {
			return append([]llm.Message{sum}, rest...)
		}
	}
	return msgs
}

// maxSummary bounds the summary's text.
const maxSummary = 4000

// summarise states what happened in turns: per turn, the user's request,
// the tools called (failures counted) and the answer, each clipped.
func summarise(turns [][]llm.Message) llm.Message {
	var b strings.Builder
	fmt.Fprintf(&b, "Summary of the %d earliest turns of this conversation (left out to fit the context):", len(turns))
	for _, t := range turns {
		var asked, answer string
		var tools []string
		for _, m := range t {
			switch m.Role {
			case llm.RoleUser:
				asked = m.Content
			case llm.RoleAssistant:
				for _, c := range m.ToolCalls {
					tools = append(tools, c.Name)
				}
				if m.Content != "" {
					answer = m.Content
				}
			}
		}
		b.WriteString("\n- ")
		if asked != "" {
			fmt.Fprintf(&b, "the user asked %q", clip(asked, 160))
		}
		if len(tools) > 0 {
			fmt.Fprintf(&b, "; you called %s", strings.Join(tools, ", "))
		}
		if answer != "" {
			fmt.Fprintf(&b, "; you answered %q", clip(answer, 160))
		}
		if b.Len() > maxSummary {
			break
		}
	}
	s := b.String()
	if len(s) > maxSummary {
		s = strings.ToValidUTF8(s[:maxSummary], "") + "…"
	}
	return llm.Message{Role: llm.RoleUser, Content: s}
}

// estimate is a conversation's size in tokens, about four characters
// each plus a few per message: close enough to keep clear of a context
// limit without a provider's tokenizer.
func estimate(msgs []llm.Message) int {
	n := 0
	for _, m := range msgs {
		n += 4 + len(m.Content)/4
		for _, c := range m.ToolCalls {
			n += 4 + (len(c.Name)+len(c.Arguments))/4
		}
	}
	return n
}

// clip is s on one line, cut to n runes (never inside a character).
func clip(s string, n int) string {
	r := []rune(strings.Join(strings.Fields(s), " "))
	if len(r) <= n {
		return string(r)
	}
	return string(r[:n]) + "…"
}
