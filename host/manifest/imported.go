package manifest

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Imported builds the manifest of the tool tool of the MCP server server
// (a policy's mcpServers entry): ID mcp:<server>.<tool>, the server's
// input schema as parameters, its output schema when it is an object, and
// the server's securityContext. The tool's name must fit an ID part once
// lower-cased ('-' for other characters).
func Imported(server, tool, title, description string, params, output json.RawMessage, sc *SecurityContext, idempotent bool) (*Tool, error) {
	name := IDPart(tool)
	if name == "" {
		return nil, fmt.Errorf("mcp server %s: tool %q has no usable name", server, tool)
	}
	if strings.TrimSpace(description) == "" {
		description = fmt.Sprintf("The tool %s of the MCP server %s.", tool, server)
	}
	if title == "" {
		title = tool
	}
	t := &Tool{
		ToolID: NamespaceMCP + ":" + server + "." + name, DisplayName: title, Description: description, Version: "1.0.0",
		Handler:    Handler{Type: HandlerMCP, Server: server, Tool: tool},
		Parameters: params, SecurityContext: sc, Idempotent: idempotent, imported: true,
	}
	var o struct {
		Type string `json:"type"`
	}
	if len(output) > 0 && json.Unmarshal(output, &o) == nil && o.Type == "object" {
		t.Output = output
	}
	if len(t.Parameters) == 0 {
		t.Parameters = json.RawMessage(`{"type":"object"}`)
	}
	if err := t.validate(false); err != nil {
		return nil, err
	}
	return t, nil
}
