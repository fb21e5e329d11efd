package serve

import (
	"net/http"
	"reflect"
	"regexp"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

var pathParam = regexp.MustCompile(`\{([a-z]+)\}`)

// queryParams are the query parameters of the routes that take some,
// by "METHOD path".
var queryParams = map[string][]map[string]any{
	"POST /v1/tools/{id}/call": {
		queryParam("async", "true: answer 202 with a job at once", map[string]any{"type": "string", "enum": []string{"true", "false"}}),
	},
	"GET /v1/jobs": {
		queryParam("limit", "jobs per page (default 100)", map[string]any{"type": "integer", "minimum": 1, "maximum": 100}),
		queryParam("after", "the next of the page before", map[string]any{"type": "string"}),
	},
	"GET /v1/sessions": {
		queryParam("limit", "sessions per page (default 50)", map[string]any{"type": "integer", "minimum": 1, "maximum": 500}),
		queryParam("cursor", "the next of the page before", map[string]any{"type": "string"}),
	},
	"GET /v1/sessions/{id}/messages": {
		queryParam("limit", "messages per page (default 100)", map[string]any{"type": "integer", "minimum": 1, "maximum": 500}),
		queryParam("before", "only messages with a lower seq (the first seq of the page after); none: the latest", map[string]any{"type": "integer", "minimum": 1}),
	},
}

func queryParam(name, desc string, schema map[string]any) map[string]any {
	return map[string]any{"name": name, "in": "query", "required": false, "description": desc, "schema": schema}
}

// OpenAPI is the OpenAPI 3.1 document of the API, generated from the
// route table and the Go types of its bodies.
func (s *Server) OpenAPI() map[string]any {
	paths := map[string]any{}
	for _, rt := range s.routes() {
		if rt.Path == "/{$}" || rt.Path == "/console/{file}" {
			continue // the console's static files
		}
		op := map[string]any{"summary": rt.Summary, "operationId": strings.ToLower(rt.Method) + strings.NewReplacer("/", "_", "{", "", "}", "", ".", "_").Replace(rt.Path)}
		var params []any
		for _, m := range pathParam.FindAllStringSubmatch(rt.Path, -1) {
			params = append(params, map[string]any{"name": m[1], "in": "path", "required": true, "schema": map[string]any{"type": "string"}})
		}
		for _, q := range queryParams[rt.Method+" "+rt.Path] {
			params = append(params, q)
		}
		if params != nil {
			op["parameters"] = params
		}
		if rt.Scope != "" {
			op["security"] = []any{map[string]any{"bearer": []string{rt.Scope}}}
		}
		if rt.Request != nil {
			op["requestBody"] = map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{"schema": schemaOf(rt.Request)}}}
		}
		resp := map[string]any{"description": "success"}
		switch {
		case rt.Stream:
			resp["content"] = map[string]any{"text/event-stream": map[string]any{"schema": schemaOf(rt.Response)}}
		case rt.Response != nil:
			resp["content"] = map[string]any{"application/json": map[string]any{"schema": schemaOf(rt.Response)}}
		}
		errResp := map[string]any{"description": "an error", "content": map[string]any{"application/json": map[string]any{"schema": schemaOf(ErrorBody{})}}}
		op["responses"] = map[string]any{"200": resp, "default": errResp}
		for code, r := range moreResponses[rt.Method+" "+rt.Path] { // approvals.go
			op["responses"].(map[string]any)[code] = map[string]any{"description": r.desc, "content": map[string]any{"application/json": map[string]any{"schema": schemaOf(r.body)}}}
		}
		item, _ := paths[rt.Path].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths[rt.Path] = item
		}
		item[strings.ToLower(rt.Method)] = op
	}
	return map[string]any{
		"openapi": "3.1.0",
		"info":    map[string]any{"title": "agenthost", "version": "1"},
		"paths":   paths,
		"components": map[string]any{"securitySchemes": map[string]any{
			"bearer": map[string]any{"type": "http", "scheme": "bearer"},
		}},
	}
}

func schemaOf(v any) any {
	sch, err := jsonschema.ForType(reflect.TypeOf(v), &jsonschema.ForOptions{IgnoreInvalidTypes: true})
	if err != nil {
		return map[string]any{}
	}
	return sch
}

func (s *Server) openapi(w http.ResponseWriter, r *http.Request, c *call) {
	writeJSON(w, http.StatusOK, s.OpenAPI())
}
