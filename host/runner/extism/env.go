package extism

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// envModule is the import module of every Extism plugin.
const envModule = "extism:host/env"

// instKey is the context key of the *instance a host function serves.
type instKey struct{}

// instanceOf returns the call state of the plugin calling a host
// function. The runner puts it outermost in the call's context, so the
// lookup is one comparison.
func instanceOf(ctx context.Context) *instance {
	inst, ok := ctx.Value(instKey{}).(*instance)
	if !ok {
		panic(fmt.Errorf("extism host function called outside a call"))
	}
	return inst
}

var (
	i32 = api.ValueTypeI32
	i64 = api.ValueTypeI64
)

// hostFunc is one function of extism:host/env.
type hostFunc struct {
	name    string
	params  []api.ValueType
	results []api.ValueType
	fn      func(ctx context.Context, inst *instance, stack []uint64)
}

// envFuncs lists extism:host/env as the upstream kernel and go-sdk v1.7.1
// define it. Offsets are i64; single bytes are i32.
func envFuncs() []hostFunc {
	return []hostFunc{
		{"alloc", []api.ValueType{i64}, []api.ValueType{i64}, func(_ context.Context, in *instance, s []uint64) { s[0] = in.k.alloc(s[0]) }},
		{"free", []api.ValueType{i64}, nil, func(_ context.Context, in *instance, s []uint64) { in.k.free(s[0]) }},
		{"length", []api.ValueType{i64}, []api.ValueType{i64}, func(_ context.Context, in *instance, s []uint64) { s[0] = in.k.length(s[0]) }},
		{"length_unsafe", []api.ValueType{i64}, []api.ValueType{i64}, func(_ context.Context, in *instance, s []uint64) { s[0] = in.k.length(s[0]) }},
		{"load_u8", []api.ValueType{i64}, []api.ValueType{i32}, func(_ context.Context, in *instance, s []uint64) { s[0] = uint64(in.k.loadU8(s[0])) }},
		{"load_u64", []api.ValueType{i64}, []api.ValueType{i64}, func(_ context.Context, in *instance, s []uint64) { s[0] = in.k.loadU64(s[0]) }},
		{"store_u8", []api.ValueType{i64, i32}, nil, func(_ context.Context, in *instance, s []uint64) { in.k.storeU8(s[0], uint8(s[1])) }},
		{"store_u64", []api.ValueType{i64, i64}, nil, func(_ context.Context, in *instance, s []uint64) { in.k.storeU64(s[0], s[1]) }},
		{"input_length", nil, []api.ValueType{i64}, func(_ context.Context, in *instance, s []uint64) { s[0] = uint64(len(in.k.input)) }},
		{"input_offset", nil, []api.ValueType{i64}, func(_ context.Context, in *instance, s []uint64) { s[0] = in.k.inputOff }},
		{"input_load_u8", []api.ValueType{i64}, []api.ValueType{i32}, func(_ context.Context, in *instance, s []uint64) { s[0] = uint64(in.k.inputU8(s[0])) }},
		{"input_load_u64", []api.ValueType{i64}, []api.ValueType{i64}, func(_ context.Context, in *instance, s []uint64) { s[0] = in.k.inputU64(s[0]) }},
		{"input_set", []api.ValueType{i64, i64}, nil, func(_ context.Context, in *instance, s []uint64) {
			in.k.input = in.k.span(s[0], s[1])
			in.k.inputOff = s[0]
		}},
		{"output_set", []api.ValueType{i64, i64}, nil, func(_ context.Context, in *instance, s []uint64) { in.setOutput(s[0], s[1]) }},
		{"output_length", nil, []api.ValueType{i64}, func(_ context.Context, in *instance, s []uint64) { s[0] = in.k.outLen }},
		{"output_offset", nil, []api.ValueType{i64}, func(_ context.Context, in *instance, s []uint64) { s[0] = in.k.outOff }},
		{"error_set", []api.ValueType{i64}, nil, func(_ context.Context, in *instance, s []uint64) { in.k.errOff = s[0] }},
		{"error_get", nil, []api.ValueType{i64}, func(_ context.Context, in *instance, s []uint64) { s[0] = in.k.errOff }},
		{"reset", nil, nil, func(_ context.Context, in *instance, s []uint64) { in.k.reset() }},
		{"memory_bytes", nil, []api.ValueType{i64}, func(_ context.Context, in *instance, s []uint64) { s[0] = in.k.next }},
		{"config_get", []api.ValueType{i64}, []api.ValueType{i64}, func(_ context.Context, in *instance, s []uint64) {
			v, ok := in.config[string(in.k.bytesAt(s[0]))]
			if !ok {
				s[0] = 0
				return
			}
			s[0] = in.k.write([]byte(v))
		}},
		{"var_get", []api.ValueType{i64}, []api.ValueType{i64}, func(_ context.Context, in *instance, s []uint64) {
			name := in.k.bytesAt(s[0])
			in.k.free(s[0])
			v, ok := in.vars[string(name)]
			if !ok {
				s[0] = 0
				return
			}
			s[0] = in.k.write(v)
		}},
		{"var_set", []api.ValueType{i64, i64}, nil, func(_ context.Context, in *instance, s []uint64) { in.setVar(s[0], s[1]) }},
		{"http_request", []api.ValueType{i64, i64}, []api.ValueType{i64}, func(ctx context.Context, in *instance, s []uint64) { s[0] = in.httpRequest(ctx, s[0], s[1]) }},
		{"http_status_code", nil, []api.ValueType{i32}, func(_ context.Context, in *instance, s []uint64) { s[0] = uint64(uint32(in.httpStatus)) }},
		{"http_headers", nil, []api.ValueType{i64}, func(_ context.Context, in *instance, s []uint64) {
			if in.httpHeaders == nil {
				s[0] = 0
				return
			}
			b, err := json.Marshal(in.httpHeaders)
			if err != nil {
				panic(fmt.Errorf("http_headers: %w", err))
			}
			s[0] = in.k.write(b)
		}},
		{"get_log_level", nil, []api.ValueType{i32}, func(_ context.Context, in *instance, s []uint64) { s[0] = uint64(minLogLevel) }},
		{"log_trace", []api.ValueType{i64}, nil, func(_ context.Context, in *instance, s []uint64) { in.log(levelTrace, s[0]) }},
		{"log_debug", []api.ValueType{i64}, nil, func(_ context.Context, in *instance, s []uint64) { in.log(levelDebug, s[0]) }},
		{"log_info", []api.ValueType{i64}, nil, func(_ context.Context, in *instance, s []uint64) { in.log(levelInfo, s[0]) }},
		{"log_warn", []api.ValueType{i64}, nil, func(_ context.Context, in *instance, s []uint64) { in.log(levelWarn, s[0]) }},
		{"log_error", []api.ValueType{i64}, nil, func(_ context.Context, in *instance, s []uint64) { in.log(levelError, s[0]) }},
	}
}

// Extism log levels as get_log_level reports them.
const (
	levelTrace int32 = iota
	levelDebug
	levelInfo
	levelWarn
	levelError
)

// minLogLevel is the lowest level collected into Result.Logs: trace
// messages are dropped, so a chatty plugin does not spend the 64 KiB log
// budget on them.
const minLogLevel = levelDebug

var levelNames = [...]string{"trace", "debug", "info", "warn", "error"}

// instantiateEnv defines extism:host/env in rt.
func instantiateEnv(ctx context.Context, rt wazero.Runtime) error {
	b := rt.NewHostModuleBuilder(envModule)
	for _, f := range envFuncs() {
		fn := f.fn
		b.NewFunctionBuilder().
			WithGoFunction(api.GoFunc(func(ctx context.Context, stack []uint64) {
				fn(ctx, instanceOf(ctx), stack)
			}), f.params, f.results).
			Export(f.name)
	}
	if _, err := b.Instantiate(ctx); err != nil {
		return fmt.Errorf("instantiate %s: %w", envModule, err)
	}
	return nil
}

// envSignatures maps each env function to its signature, for checking a
// plugin's imports at Prepare.
func envSignatures() map[string]hostFunc {
	m := make(map[string]hostFunc)
	for _, f := range envFuncs() {
		m[f.name] = f
	}
	return m
}
