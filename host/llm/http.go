package llm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Error is a provider's refusal of a request (an answer of 4xx other than
// 429): its own message, and the tool whose schema it named when it named
// one, so a bad definition is found without reading the request.
type Error struct {
	// Provider is "openai", "anthropic" or "gemini".
	Provider string
	URL      string
	Status   int
	// Message is the provider's message (the key redacted).
	Message string
	// Tool is the wire name of the tool the message points at, or "".
	Tool string
}

func (e *Error) Error() string {
	s := fmt.Sprintf("%s: %s answered %d %s: %s", e.Provider, e.URL, e.Status, http.StatusText(e.Status), e.Message)
	if e.Tool != "" {
		s += fmt.Sprintf(" (the definition of tool %s)", e.Tool)
	}
	return s
}

// retryDefaults fills zero retry settings (shared by the providers).
func retryDefaults(timeout *time.Duration, retries *int, base *time.Duration) {
	if *timeout <= 0 {
		*timeout = 60 * time.Second
	}
	switch {
	case *retries == 0:
		*retries = 3
	case *retries < 0:
		*retries = 0
	}
	if *base <= 0 {
		*base = 500 * time.Millisecond
	}
}

// withRetries runs try until it succeeds, fails for good, or the retries
// (429 and 5xx, with exponential back-off or the wait the server named)
// are spent.
func withRetries(ctx context.Context, retries int, base time.Duration, try func() (Response, bool, error)) (Response, error) {
	var last error
	for attempt := 0; attempt <= retries; attempt++ {
		if attempt > 0 {
			wait := base << (attempt - 1)
			var ra *retryAfter
			if errors.As(last, &ra) && ra.wait > 0 {
				wait = min(ra.wait, maxRetryAfter)
			}
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return Response{}, ctx.Err()
			}
		}
		resp, retry, err := try()
		if err == nil {
			return resp, nil
		}
		last = err
		if !retry {
			break
		}
	}
	if last == nil {
		last = errors.New("no attempt made")
	}
	return Response{}, last
}

// call is one HTTP request to a provider.
type call struct {
	who     string
	client  *http.Client
	timeout time.Duration
	url     string
	headers map[string]string
	body    []byte
	key     string
	tools   []ToolDef
}

// send posts the request and returns a 200 answer, whose body the caller
// reads and closes (then calls done); retry says whether a failure may
// pass (429, 5xx, a network error). The key never appears in an error.
func (c call) send(ctx context.Context) (resp *http.Response, done func(), retry bool, err error) {
	rctx, cancel := context.WithTimeout(ctx, c.timeout)
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, c.url, bytes.NewReader(c.body))
	if err != nil {
		cancel()
		return nil, nil, false, fmt.Errorf("%s: %w", c.who, err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range c.headers {
		req.Header.Set(k, v)
	}
	resp, err = c.client.Do(req)
	if err != nil {
		cancel()
		return nil, nil, ctx.Err() == nil, fmt.Errorf("%s: %s: %s", c.who, c.url, redactErr(err, c.key))
	}
	if resp.StatusCode == http.StatusOK {
		return resp, func() { resp.Body.Close(); cancel() }, false, nil
	}
	defer cancel()
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	msg, tool := c.refusal(raw)
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
		err := fmt.Errorf("%s: %s answered %s: %s", c.who, c.url, resp.Status, msg)
		if wait := retryWait(resp.Header, raw); wait > 0 {
			return nil, nil, true, &retryAfter{err: err, wait: wait}
		}
		return nil, nil, true, err
	}
	return nil, nil, false, &Error{Provider: c.who, URL: c.url, Status: resp.StatusCode, Message: msg, Tool: tool}
}

// post sends the request and reads the whole 200 answer.
func (c call) post(ctx context.Context) ([]byte, bool, error) {
	resp, done, retry, err := c.send(ctx)
	if err != nil {
		return nil, retry, err
	}
	defer done()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return nil, true, fmt.Errorf("%s: %s: reading the answer: %s", c.who, c.url, redactErr(err, c.key))
	}
	return raw, false, nil
}

// toolIndex finds a tool's position in a provider's error message or
// parameter path: Gemini's "function_declarations[3]" (its "tools[0]" is
// the wrapper of all declarations, so it is tried first), OpenAI's
// "tools[3]", Anthropic's "tools.3.".
var toolIndex = []*regexp.Regexp{
	regexp.MustCompile(`function_?[dD]eclarations\[(\d+)\]`),
	regexp.MustCompile(`tools(?:\.|\[)(\d+)`),
}

// refusal reads a provider's error answer: its message (OpenAI and Gemini
// {"error": {"message"}}, Anthropic {"type": "error", "error":
// {"message"}}; anything else quoted briefly) and the tool it names.
func (c call) refusal(raw []byte) (msg, tool string) {
	var e struct {
		Error struct {
			Message string `json:"message"`
			Param   string `json:"param"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &e) == nil && e.Error.Message != "" {
		msg = e.Error.Message
		if len(msg) > 2000 {
			msg = msg[:2000] + "…"
		}
		if c.key != "" {
			msg = strings.ReplaceAll(msg, c.key, "[REDACTED]")
		}
	} else {
		msg = snippet(raw, c.key)
	}
	for _, re := range toolIndex {
		for _, where := range []string{e.Error.Param, msg} {
			if m := re.FindStringSubmatch(where); m != nil {
				if i, err := strconv.Atoi(m[1]); err == nil && i < len(c.tools) {
					return msg, c.tools[i].Name
				}
			}
		}
	}
	// A message may name the function instead ("Invalid schema for
	// function 'hash__digest'"): the longest name it holds wins, so
	// "a__b" does not shadow "a__b_c".
	for _, t := range c.tools {
		if strings.Contains(msg, t.Name) && len(t.Name) > len(tool) {
			tool = t.Name
		}
	}
	return msg, tool
}

// retryWait is the wait a 429 or 5xx answer asks for: Retry-After in
// seconds or as a date, OpenAI's retry-after-ms, or Gemini's RetryInfo
// retryDelay ("30s") in the body; 0 when none.
func retryWait(h http.Header, body []byte) time.Duration {
	if ms, err := strconv.ParseFloat(strings.TrimSpace(h.Get("Retry-After-Ms")), 64); err == nil && ms > 0 {
		return time.Duration(ms * float64(time.Millisecond))
	}
	if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if secs, err := strconv.ParseFloat(v, 64); err == nil && secs > 0 {
			return time.Duration(secs * float64(time.Second))
		}
		if t, err := http.ParseTime(v); err == nil {
			if d := time.Until(t); d > 0 {
				return d
			}
		}
	}
	if m := retryDelay.FindSubmatch(body); m != nil {
		if d, err := time.ParseDuration(string(m[1])); err == nil && d > 0 {
			return d
		}
	}
	return 0
}

var retryDelay = regexp.MustCompile(`"retryDelay"\s*:\s*"([0-9.]+s)"`)

// maxRetryAfter caps the wait a server's Retry-After can ask for.
const maxRetryAfter = 60 * time.Second

// retryAfter is a retryable failure whose answer named a wait.
type retryAfter struct {
	err  error
	wait time.Duration
}

func (e *retryAfter) Error() string { return e.err.Error() }
func (e *retryAfter) Unwrap() error { return e.err }

// snippet is the start of an answer body for an error, the key removed.
func snippet(b []byte, key string) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	if key != "" {
		s = strings.ReplaceAll(s, key, "[REDACTED]")
	}
	return s
}

func redactErr(err error, key string) string {
	if key == "" {
		return err.Error()
	}
	return strings.ReplaceAll(err.Error(), key, "[REDACTED]")
}

// maxAnswer bounds an answer, streamed or not: a server that keeps
// sending is an error, not unbounded memory.
const maxAnswer = 16 << 20

// capped reads r until maxAnswer bytes, then fails.
type capped struct {
	r    io.Reader
	left int64
}

func (c *capped) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, fmt.Errorf("the answer is larger than %d bytes", maxAnswer)
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

// stream is a 200 answer's body for a stream parser, capped.
func stream(resp *http.Response) io.Reader { return &capped{r: resp.Body, left: maxAnswer} }

// sseEvent is one server-sent event: its event name ("" when the stream
// names none) and its data lines joined by newlines.
type sseEvent struct {
	name, data string
}

// maxSSELine bounds one line of a stream: a longer one is an error, not
// an unbounded buffer.
const maxSSELine = 8 << 20

// readSSE calls fn for each event of a server-sent event stream until fn
// says stop or the stream ends; comments and retry / id fields are
// skipped.
func readSSE(r io.Reader, fn func(sseEvent) (stop bool, err error)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxSSELine)
	var ev sseEvent
	var data []string
	dispatch := func() (bool, error) {
		if len(data) == 0 {
			ev = sseEvent{}
			return false, nil
		}
		ev.data = strings.Join(data, "\n")
		stop, err := fn(ev)
		ev, data = sseEvent{}, nil
		return stop, err
	}
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if line == "" {
			if stop, err := dispatch(); stop || err != nil {
				return err
			}
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			ev.name = value
		case "data":
			data = append(data, value)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("a stream line is longer than %d bytes", maxSSELine)
		}
		return err
	}
	_, err := dispatch()
	return err
}
