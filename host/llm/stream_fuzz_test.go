package llm

import (
	"strings"
	"testing"
)

// FuzzStreams feeds arbitrary bytes to each provider's stream parser:
// each returns a response or an error, never a panic, and a response
// only for a stream that reached its end event.
func FuzzStreams(f *testing.F) {
	for _, s := range []string{
		"data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n",
		"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"function\":{\"name\":\"n\",\"arguments\":\"{}\"}}]}}]}\n\ndata: [DONE]\n\n",
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"n\"}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
		"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"x\"}]},\"finishReason\":\"STOP\"}]}\r\n\r\n",
		"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":99999}]}}]}\n\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for name, parse := range map[string]func(string) (Response, error){
			"openai":    func(s string) (Response, error) { return parseOpenAIStream(strings.NewReader(s), func(string) {}) },
			"anthropic": func(s string) (Response, error) { return parseAnthropicStream(strings.NewReader(s), func(string) {}) },
			"gemini":    func(s string) (Response, error) { return parseGeminiStream(strings.NewReader(s), func(string) {}) },
		} {
			resp, err := parse(s)
			if err == nil && len(resp.ToolCalls) > maxStreamCalls {
				t.Fatalf("%s: %d tool calls", name, len(resp.ToolCalls))
			}
		}
	})
}
