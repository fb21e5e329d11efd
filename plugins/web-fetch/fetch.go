//go:build wasip1

// Command web-fetch is the web:fetch tool, an Extism-ABI plugin written
// with abi/pdk: it fetches one URL through the host's http_request (so the
// tool's network grant decides where it may go) and returns the status,
// selected headers and the body as text, truncated to maxBytes.
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -buildvcs=false -o toolpacks/web/web-fetch.wasm ./plugins/web-fetch
package main

import (
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/agenthost/agenthost/abi/pdk"
)

// Caps on maxBytes.
const (
	defaultMaxBytes = 64 << 10
	maxMaxBytes     = 1 << 20
)

// keptHeaders are the response headers reported.
var keptHeaders = []string{"content-type", "content-length", "content-language", "last-modified", "etag", "location", "cache-control"}

// args are the tool's arguments.
type args struct {
	URL      string            `json:"url"`
	Method   string            `json:"method"`
	MaxBytes int               `json:"maxBytes"`
	Headers  map[string]string `json:"headers"`
}

// result is the tool's output.
type result struct {
	URL       string            `json:"url"`
	Status    int               `json:"status"`
	Headers   map[string]string `json:"headers"`
	Text      string            `json:"text"`
	Bytes     int               `json:"bytes"`
	Truncated bool              `json:"truncated"`
}

//go:wasmexport call
func call() int32 { return pdk.Handle(fetch) }

func fetch(a args) (result, error) {
	if a.URL == "" {
		return result{}, errors.New("url is required")
	}
	if !strings.HasPrefix(a.URL, "http://") && !strings.HasPrefix(a.URL, "https://") {
		return result{}, errors.New("url must start with http:// or https://")
	}
	method := strings.ToUpper(a.Method)
	if method == "" {
		method = "GET"
	}
	if method != "GET" && method != "HEAD" {
		return result{}, errors.New("method must be GET or HEAD")
	}
	max := a.MaxBytes
	if max <= 0 {
		max = defaultMaxBytes
	}
	if max > maxMaxBytes {
		max = maxMaxBytes
	}
	resp := pdk.Fetch(pdk.HTTPRequest{URL: a.URL, Method: method, Headers: a.Headers}, nil)
	out := result{URL: a.URL, Status: resp.Status, Headers: map[string]string{}, Bytes: len(resp.Body)}
	for _, h := range keptHeaders {
		if v, ok := resp.Headers[h]; ok {
			out.Headers[h] = v
		}
	}
	body := resp.Body
	if len(body) > max {
		body = body[:max]
		// Do not cut a UTF-8 sequence in half.
		for i := 0; i < utf8.UTFMax && len(body) > 0; i++ {
			if r, size := utf8.DecodeLastRune(body); r != utf8.RuneError || size > 1 {
				break
			}
			body = body[:len(body)-1]
		}
		out.Truncated = true
	}
	out.Text = strings.ToValidUTF8(string(body), "\uFFFD")
	return out, nil
}

func main() {}
