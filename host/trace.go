package host

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/agenthost/agenthost/abi"
)

type callIDKey struct{}

// WithCallID names the tool call a context is for (a model's tool call
// ID, a job ID): traces record it as gen_ai.tool.call.id.
func WithCallID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, callIDKey{}, id)
}

// CallIDFrom returns the call ID set by WithCallID, or "".
func CallIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(callIDKey{}).(string)
	return id
}

// startSpan opens the span of one tool call, named and attributed after
// the OpenTelemetry semantic conventions for generative AI
// ("execute_tool <name>", gen_ai.operation.name, gen_ai.tool.name,
// gen_ai.tool.call.id, gen_ai.tool.type); end records the outcome (the
// error code as error.type, and an error status).
func (h *Host) startSpan(ctx context.Context, id string) (context.Context, func(abi.Envelope)) {
	attrs := make([]attribute.KeyValue, 0, 5)
	attrs = append(attrs, attrOperation, attrToolType, attribute.String("gen_ai.tool.name", id))
	if cid := CallIDFrom(ctx); cid != "" {
		attrs = append(attrs, attribute.String("gen_ai.tool.call.id", cid))
	}
	if h.opts.Tenant != "" {
		attrs = append(attrs, attribute.String("agenthost.tenant", h.opts.Tenant))
	}
	ctx, span := h.opts.Tracer.Start(ctx, "execute_tool "+id, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	return ctx, func(env abi.Envelope) {
		// The span's own times are the call's duration.
		if env.Error == nil {
			span.SetAttributes(attrSuccess)
		} else {
			span.SetAttributes(attribute.String("agenthost.status", string(env.Status)))
			span.SetAttributes(attribute.String("error.type", string(env.Error.Code)))
			span.SetStatus(codes.Error, string(env.Error.Code))
		}
		span.End()
	}
}

// The attributes every span shares, built once.
var (
	attrOperation = attribute.String("gen_ai.operation.name", "execute_tool")
	attrToolType  = attribute.String("gen_ai.tool.type", "function")
	attrSuccess   = attribute.String("agenthost.status", string(abi.StatusSuccess))
)
