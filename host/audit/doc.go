// Package audit builds the security reviewer's report
// (agenthost audit): for every tool, what its manifest requests against
// what the policy grants — files, network, environment, limits and fuel —
// with each denial and its reason, risk flags, the module digest, and the
// manifests that failed to load.
//
// [Build] turns [Entry] values (a tool with its [policy.Grant], or a load
// error) into a [Report]; [Report.Write] renders it as text, JSON or
// Markdown. The output is deterministic: tools are ordered by ID, version
// and path, load errors by path.
package audit
