// Package abi is the wire contract of agenthost: the result envelope, the
// error codes of the result envelope, and the JSON Schemas of the manifest, the policy
// and the envelope. It imports only the standard library, so it can also be
// compiled into guests (GOOS=wasip1).
//
// Two guest ABIs are supported; see docs/ABI.md:
//
//   - wasi-command: the host writes the call's arguments as one JSON object to
//     stdin and runs _start; the guest writes one JSON value to stdout and
//     exits 0. The Go SDK for it is package [github.com/agenthost/agenthost/abi/guest].
//   - extism: a plugin built with any Extism PDK; input bytes are the
//     arguments JSON and output bytes are the result JSON.
package abi

// Version is the version of the guest ABI contract described in docs/ABI.md.
const Version = "1"
