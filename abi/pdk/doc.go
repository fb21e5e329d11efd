// Package pdk is a Go guest PDK for the Extism ABI (docs/ABI.md,
// "## extism"): plugins written with standard Go, built with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o plugin.wasm ./plugin
//
// export their entry point with //go:wasmexport and run on any Extism host
// (agenthost, go-sdk, the Rust runtime). The upstream Go PDK needs TinyGo;
// this one needs only the standard toolchain.
//
//	package main
//
//	import "github.com/agenthost/agenthost/abi/pdk"
//
//	type args struct{ Name string `json:"name"` }
//
//	//go:wasmexport call
//	func call() int32 {
//		return pdk.Handle(func(a args) (map[string]string, error) {
//			pdk.Log(pdk.LogInfo, "greeting "+a.Name)
//			return map[string]string{"greeting": "hello " + a.Name}, nil
//		})
//	}
//
//	func main() {}
//
// It covers input ([Input], [InputJSON]), output ([Output],
// [OutputJSON]), errors ([SetError]), config ([Config]), vars ([GetVar],
// [SetVar], [RemoveVar]), logs ([Log]) and HTTP ([Fetch]), plus raw
// kernel memory ([Alloc], [Memory]). Every function calls the host
// through the extism:host/env imports of the Extism kernel (the signatures
// of go-sdk v1.7.1's runtime); outside GOOS=wasip1 the package holds only
// its types.
package pdk

// LogLevel is an Extism log level.
type LogLevel int32

// The Extism log levels, in get_log_level's numbering.
const (
	LogTrace LogLevel = iota
	LogDebug
	LogInfo
	LogWarn
	LogError
)

// HTTPRequest is a request for [Fetch], encoded as the Extism PDKs do.
type HTTPRequest struct {
	URL     string            `json:"url"`
	Method  string            `json:"method,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

// HTTPResponse is the answer to a [Fetch]: the status, the response
// headers (lower-case names, repeated values joined by ",") when the host
// exposes them, and the body.
type HTTPResponse struct {
	Status  int
	Headers map[string]string
	Body    []byte
}
