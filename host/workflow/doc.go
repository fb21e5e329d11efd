// Package workflow parses workflow files (*.workflow.json) and runs them:
// a graph of tool calls ("nodes") whose arguments reference the
// workflow's inputs and earlier nodes' outputs, exposed as one tool,
// workflow:<id>.
//
// The package is a leaf: it knows nothing of the host. [Manifest] turns a
// workflow into the manifest of its tool (the parameter schema derived
// from interfaceInputs, the output schema from interfaceOutputs, tests as
// examples); [Workflow.Check] checks it against a catalogue (every tool
// exists, argument types agree where both schemas say, no workflow calls
// itself); [Workflow.Run] runs it with a caller-supplied function that
// makes each tool call, so each node runs under its own tool's grant.
package workflow
