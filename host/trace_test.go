package host_test

import (
	"context"
	"encoding/json"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/hosttest"
)

// TestTracing pins one execute_tool span per call with the generative-AI
// attributes, and the error code on a failure.
func TestTracing(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	ctx := context.Background()
	h, err := host.New(ctx, host.Options{Dirs: []string{hosttest.Toolpacks(t)}, CacheDir: hosttest.CacheDir(t), Tracer: tp.Tracer("agenthost"), Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	h.Call(host.WithCallID(ctx, "call_1"), "core:echo", json.RawMessage(`{"a":1}`))
	h.Call(ctx, "text:stats", json.RawMessage(`{"txt":1}`))
	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans", len(spans))
	}
	attrs := func(i int) map[string]string {
		m := map[string]string{}
		for _, kv := range spans[i].Attributes() {
			m[string(kv.Key)] = kv.Value.String()
		}
		return m
	}
	a := attrs(0)
	if spans[0].Name() != "execute_tool core:echo" || a["gen_ai.operation.name"] != "execute_tool" || a["gen_ai.tool.name"] != "core:echo" || a["gen_ai.tool.call.id"] != "call_1" || a["agenthost.tenant"] != "acme" || a["agenthost.status"] != "success" {
		t.Fatalf("span 1: %s %v", spans[0].Name(), a)
	}
	if b := attrs(1); b["error.type"] != "INVALID_ARGUMENTS" || spans[1].Status().Code.String() != "Error" {
		t.Fatalf("span 2: %v %v", b, spans[1].Status())
	}
}

// BenchmarkTracing is a core:echo call without a tracer, and with the
// SDK's batch span processor exporting every span (to a no-op exporter,
// as a deployment would to OTLP), in the same run. The same modes on a
// Go tool that does nothing (go-*) give the span's own cost in
// microseconds, which the WebAssembly call's noise would hide.
func BenchmarkTracing(b *testing.B) {
	ctx := context.Background()
	argsOf := map[string]json.RawMessage{"core:echo": json.RawMessage(`{"a":1}`), "bench:noop": json.RawMessage(`{}`)}
	type none struct{}
	noop := host.Func(host.FuncSpec{ID: "bench:noop", Description: "Does nothing."}, func(context.Context, none) (none, error) { return none{}, nil })
	for _, mode := range []string{"off", "on", "sampled-10%"} {
		opts := host.Options{Dirs: []string{hosttest.Toolpacks(b)}, CacheDir: hosttest.CacheDir(b), Tools: []host.Tool{noop}}
		switch mode {
		case "on":
			opts.Tracer = sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter())).Tracer("bench")
		case "sampled-10%":
			opts.Tracer = sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()),
				sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.1)))).Tracer("bench")
		}
		h, err := host.New(ctx, opts)
		if err != nil {
			b.Fatal(err)
		}
		h.Call(ctx, "core:echo", argsOf["core:echo"])
		for _, tool := range []string{"core:echo", "bench:noop"} {
			name := mode
			if tool == "bench:noop" {
				name = "go-" + mode
			}
			b.Run(name, func(b *testing.B) {
				for b.Loop() {
					if env := h.Call(ctx, tool, argsOf[tool]); env.Error != nil {
						b.Fatal(env.Error)
					}
				}
			})
		}
		h.Close(ctx)
	}
}
