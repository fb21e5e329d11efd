package guest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/abi"
)

type greetIn struct {
	Name  string `json:"name"`
	Times int    `json:"times"`
}

type greetOut struct {
	Text string `json:"text"`
}

func greet(_ context.Context, in greetIn) (greetOut, error) {
	switch in.Name {
	case "fail":
		return greetOut{}, errors.New("plain failure")
	case "code":
		return greetOut{}, Errorf(abi.CodePermissionDenied, "no access to %s", "/etc")
	case "wrapped":
		return greetOut{}, fmt.Errorf("open config: %w", Errorf(abi.CodeInvalidArguments, "bad path"))
	case "details":
		return greetOut{}, abi.Errorf(abi.CodeToolError, "with details").WithDetails(map[string]int{"line": 3})
	case "badDetails":
		return greetOut{}, abi.Errorf(abi.CodeToolError, "odd details").WithDetails(make(chan int))
	case "nocode":
		return greetOut{}, &abi.Error{Message: "no code"}
	case "panic":
		panic("boom")
	}
	return greetOut{Text: strings.Repeat("hi "+in.Name+" <&> ", in.Times)}, nil
}

func TestServe(t *testing.T) {
	tests := []struct {
		name     string
		stdin    string
		wantExit int
		wantOut  string
	}{
		{"ok", `{"name":"ann","times":1}`, 0, `{"text":"hi ann <&> "}`},
		{"empty stdin is {}", "", 0, `{"text":""}`},
		{"blank stdin is {}", " \n\t", 0, `{"text":""}`},
		{"null is zero value", `null`, 0, `{"text":""}`},
		{"unknown field", `{"nam":"x"}`, 1, `{"error":{"code":"INVALID_ARGUMENTS","message":"decode arguments: json: unknown field \"nam\""}}`},
		{"wrong type", `{"name":3}`, 1, `{"error":{"code":"INVALID_ARGUMENTS","message":"decode arguments: json: cannot unmarshal number into Go struct field greetIn.name of type string"}}`},
		{"not json", `hello`, 1, `{"error":{"code":"INVALID_ARGUMENTS","message":"decode arguments: invalid character 'h' looking for beginning of value"}}`},
		{"trailing data", `{"name":"a"} {}`, 1, `{"error":{"code":"INVALID_ARGUMENTS","message":"decode arguments: unexpected data after the arguments value"}}`},
		{"truncated", `{"name":"a"`, 1, `{"error":{"code":"INVALID_ARGUMENTS","message":"decode arguments: unexpected EOF"}}`},
		{"plain error", `{"name":"fail"}`, 1, `{"error":{"code":"TOOL_ERROR","message":"plain failure"}}`},
		{"chosen code", `{"name":"code"}`, 1, `{"error":{"code":"PERMISSION_DENIED","message":"no access to /etc"}}`},
		{"wrapped code", `{"name":"wrapped"}`, 1, `{"error":{"code":"INVALID_ARGUMENTS","message":"open config: INVALID_ARGUMENTS: bad path"}}`},
		{"details", `{"name":"details"}`, 1, `{"error":{"code":"TOOL_ERROR","message":"with details","details":{"line":3}}}`},
		{"unencodable details dropped", `{"name":"badDetails"}`, 1, `{"error":{"code":"TOOL_ERROR","message":"odd details"}}`},
		{"empty code", `{"name":"nocode"}`, 1, `{"error":{"code":"TOOL_ERROR","message":"no code"}}`},
		{"panic", `{"name":"panic"}`, 1, `{"error":{"code":"TOOL_ERROR","message":"panic: boom"}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			code := serve(context.Background(), strings.NewReader(tc.stdin), &out, typed(greet))
			if code != tc.wantExit {
				t.Errorf("exit = %d, want %d", code, tc.wantExit)
			}
			if got := strings.TrimSuffix(out.String(), "\n"); got != tc.wantOut {
				t.Errorf("stdout = %s\nwant     %s", got, tc.wantOut)
			}
			if !json.Valid(out.Bytes()) {
				t.Errorf("stdout is not one JSON value: %q", out.String())
			}
		})
	}
}

func TestServeRawMessage(t *testing.T) {
	echo := func(_ context.Context, in map[string]json.RawMessage) (map[string]json.RawMessage, error) {
		return in, nil
	}
	var out bytes.Buffer
	in := `{"b":[1,2.50,{"x":null}],"a":"\u003c"}`
	if code := serve(context.Background(), strings.NewReader(in), &out, typed(echo)); code != 0 {
		t.Fatalf("exit = %d: %s", code, out.String())
	}
	if got, want := strings.TrimSpace(out.String()), `{"a":"\u003c","b":[1,2.50,{"x":null}]}`; got != want {
		t.Errorf("stdout = %s, want %s", got, want)
	}
}

func TestServeUnencodableResult(t *testing.T) {
	bad := func(context.Context, struct{}) (func(), error) { return func() {}, nil }
	var out bytes.Buffer
	if code := serve(context.Background(), strings.NewReader("{}"), &out, typed(bad)); code != 1 {
		t.Fatalf("exit = %d, want 1", code)
	}
	var body struct{ Error abi.Error }
	if err := json.Unmarshal(out.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	if body.Error.Code != abi.CodeToolError || !strings.HasPrefix(body.Error.Message, "encode result: ") {
		t.Errorf("error = %+v", body.Error)
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("bad fd") }

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("closed") }

func TestServeIOErrors(t *testing.T) {
	var out bytes.Buffer
	if code := serve(context.Background(), failingReader{}, &out, typed(greet)); code != 1 {
		t.Errorf("read error: exit = %d, want 1", code)
	}
	if got := out.String(); !strings.Contains(got, `"code":"TOOL_ERROR","message":"read stdin: bad fd"`) {
		t.Errorf("read error: stdout = %s", got)
	}
	if code := serve(context.Background(), strings.NewReader(`{"name":"x","times":1}`), failingWriter{}, typed(greet)); code != 1 {
		t.Errorf("write error: exit = %d, want 1", code)
	}
}

func TestErrorf(t *testing.T) {
	err := Errorf(abi.CodeInvalidArguments, "field %q", "x")
	if !errors.Is(err, abi.ErrInvalidArguments) {
		t.Errorf("errors.Is(%v, ErrInvalidArguments) = false", err)
	}
	if errors.Is(err, abi.ErrToolError) {
		t.Errorf("errors.Is(%v, ErrToolError) = true", err)
	}
}

func TestLogTo(t *testing.T) {
	tests := []struct {
		format string
		args   []any
		want   string
	}{
		{"read %d files", []any{3}, "read 3 files\n"},
		{"already ends\n", nil, "already ends\n"},
		{"", nil, "\n"},
	}
	for _, tc := range tests {
		var b bytes.Buffer
		logTo(&b, tc.format, tc.args...)
		if b.String() != tc.want {
			t.Errorf("logTo(%q) = %q, want %q", tc.format, b.String(), tc.want)
		}
	}
}

// BenchmarkServe measures the SDK's own per-call work (read, decode, call,
// encode, write) for a small arguments object, natively.
func BenchmarkServe(b *testing.B) {
	h := typed(greet)
	in := []byte(`{"name":"benchmark","times":2}`)
	var out bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		out.Reset()
		if code := serve(context.Background(), bytes.NewReader(in), &out, h); code != 0 {
			b.Fatalf("exit %d: %s", code, out.String())
		}
	}
}
