//go:build wasip1

// Command web-links is the web:extract-links tool, an Extism-ABI plugin
// written with abi/pdk: it returns the absolute http(s) links of a page,
// fetched through the host's http_request (under the tool's network
// grant) or given as html.
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -buildvcs=false -o toolpacks/web/web-links.wasm ./plugins/web-links
package main

import (
	"errors"
	"fmt"
	"html"
	"net/url"
	"strings"

	"github.com/agenthost/agenthost/abi/pdk"
)

// Caps.
const (
	defaultMaxLinks = 200
	maxMaxLinks     = 2000
	maxTextRunes    = 200
)

// args are the tool's arguments: exactly one of url and html.
type args struct {
	URL      string `json:"url"`
	HTML     string `json:"html"`
	BaseURL  string `json:"baseUrl"`
	MaxLinks int    `json:"maxLinks"`
}

// link is one extracted link.
type link struct {
	URL  string `json:"url"`
	Text string `json:"text"`
}

// result is the tool's output.
type result struct {
	Base      string `json:"base"`
	Links     []link `json:"links"`
	Truncated bool   `json:"truncated"`
}

//go:wasmexport call
func call() int32 { return pdk.Handle(extract) }

func extract(a args) (result, error) {
	if (a.URL == "") == (a.HTML == "") {
		return result{}, errors.New("give exactly one of url and html")
	}
	page, base := a.HTML, a.BaseURL
	if a.URL != "" {
		if !strings.HasPrefix(a.URL, "http://") && !strings.HasPrefix(a.URL, "https://") {
			return result{}, errors.New("url must start with http:// or https://")
		}
		resp := pdk.Fetch(pdk.HTTPRequest{URL: a.URL}, nil)
		if resp.Status < 200 || resp.Status > 299 {
			return result{}, fmt.Errorf("fetching %s gave status %d", a.URL, resp.Status)
		}
		page, base = string(resp.Body), a.URL
	}
	max := a.MaxLinks
	if max <= 0 {
		max = defaultMaxLinks
	}
	if max > maxMaxLinks {
		max = maxMaxLinks
	}
	var baseURL *url.URL
	if base != "" {
		u, err := url.Parse(base)
		if err != nil {
			return result{}, fmt.Errorf("invalid base URL %q: %w", base, err)
		}
		baseURL = u
	}
	links, truncated := links(page, baseURL, max)
	out := result{Links: links, Truncated: truncated}
	if baseURL != nil {
		out.Base = baseURL.String()
	}
	return out, nil
}

// links scans page for <base href> and <a href> tags and returns the
// absolute http(s) links, first occurrence first, at most max.
func links(page string, base *url.URL, max int) ([]link, bool) {
	out := []link{}
	seen := map[string]bool{}
	lower := strings.ToLower(page)
	for i := 0; i < len(page); {
		j := strings.IndexByte(lower[i:], '<')
		if j < 0 {
			break
		}
		i += j
		if strings.HasPrefix(lower[i:], "<!--") {
			end := strings.Index(lower[i:], "-->")
			if end < 0 {
				break
			}
			i += end + 3
			continue
		}
		name, attrs, end := tag(page, lower, i)
		i = end
		switch name {
		case "base":
			if href, ok := attrs["href"]; ok {
				if u, err := resolve(base, href); err == nil {
					base = u
				}
			}
		case "a":
			href, ok := attrs["href"]
			if !ok {
				continue
			}
			u, err := resolve(base, href)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
				continue
			}
			u.Fragment = ""
			s := u.String()
			if seen[s] {
				continue
			}
			if len(out) == max {
				return out, true
			}
			seen[s] = true
			out = append(out, link{URL: s, Text: anchorText(page, lower, i)})
		}
	}
	return out, false
}

// resolve makes href absolute against base.
func resolve(base *url.URL, href string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(href))
	if err != nil {
		return nil, err
	}
	if base != nil {
		u = base.ResolveReference(u)
	}
	if !u.IsAbs() {
		return nil, errors.New("relative link without a base")
	}
	return u, nil
}

// tag parses the tag starting at page[i] ('<') and returns its lower-case
// name, its attributes (names lower-case, values unescaped) and the index
// after it.
func tag(page, lower string, i int) (string, map[string]string, int) {
	n := len(page)
	j := i + 1
	for j < n && isNameByte(lower[j]) {
		j++
	}
	name := lower[i+1 : j]
	attrs := map[string]string{}
	for j < n {
		for j < n && isSpace(page[j]) {
			j++
		}
		if j >= n {
			break
		}
		if page[j] == '>' {
			return name, attrs, j + 1
		}
		if page[j] == '/' {
			j++
			continue
		}
		k := j
		for j < n && !isSpace(page[j]) && page[j] != '=' && page[j] != '>' && page[j] != '/' {
			j++
		}
		key := lower[k:j]
		for j < n && isSpace(page[j]) {
			j++
		}
		if j >= n || page[j] != '=' {
			attrs[key] = ""
			continue
		}
		j++
		for j < n && isSpace(page[j]) {
			j++
		}
		var val string
		if j < n && (page[j] == '"' || page[j] == '\'') {
			q := page[j]
			e := strings.IndexByte(page[j+1:], q)
			if e < 0 {
				return name, attrs, n
			}
			val = page[j+1 : j+1+e]
			j += e + 2
		} else {
			k := j
			for j < n && !isSpace(page[j]) && page[j] != '>' {
				j++
			}
			val = page[k:j]
		}
		if _, dup := attrs[key]; !dup {
			attrs[key] = html.UnescapeString(val)
		}
	}
	return name, attrs, n
}

// anchorText returns the text up to the next </a>, tags removed,
// whitespace collapsed, at most maxTextRunes runes.
func anchorText(page, lower string, i int) string {
	end := strings.Index(lower[i:], "</a")
	if end < 0 {
		return ""
	}
	raw := page[i : i+end]
	var b strings.Builder
	inTag := false
	for _, r := range raw {
		switch {
		case r == '<':
			inTag = true
		case r == '>':
			inTag = false
		case !inTag:
			b.WriteRune(r)
		}
	}
	text := strings.Join(strings.Fields(html.UnescapeString(b.String())), " ")
	if r := []rune(text); len(r) > maxTextRunes {
		text = string(r[:maxTextRunes]) + "…"
	}
	return text
}

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-'
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }

func main() {}
