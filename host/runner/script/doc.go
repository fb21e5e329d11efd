// Package script is the subprocess bridge: it runs handler.type
// "external-script" tools (language python → python3, nodejs → node,
// bun → bun) under the same [policy.Grant] as WASM tools, confined by the
// kernel through package isolate.
//
// A call follows the wasi-command convention: the arguments
// as one JSON object on stdin, one JSON value on stdout, stderr into the
// result's logs (64 KiB, truncated with a marker), a non-zero exit is
// TOOL_ERROR (with the message of a {"error":{"code","message"}} object
// on stdout when there is one), and the working directory is the call's
// fresh $TMP, removed afterwards. The child gets argv only, never a
// shell, and an environment scrubbed to the granted variables plus PATH
// (system directories), HOME and TMPDIR (= $TMP), LANG=C.UTF-8 and
// AGENTHOST_WORKSPACE.
//
// Isolation (see docs/SECURITY.md, "Script bridge"): Landlock file rules
// from the grant with all TCP denied, no_new_privs, fresh network and PID
// namespaces, an unprivileged per-call uid (root hosts) or user namespace
// (other hosts), and rlimits on address space, data, processes, file
// size, open files and CPU. Where one of these is unavailable a call runs
// only if grant.AllowDegraded is set, and its logs say which protections
// applied. [Protections] reports what this machine offers.
//
// Dependencies are installed once per tool at Prepare: a package.json
// with npm (lifecycle scripts off) into a cache keyed by the digest of
// package.json and its lockfile; a requirements.txt into a per-tool venv,
// offline, from the tool's own wheels/ folder (pip --no-index
// --find-links). A failed install is remembered on disk and every call
// then fails with TOOL_ERROR.
//
// Grants that list network hosts get a network namespace of their own
// whose only way out is the host's netguard proxy (root hosts); elsewhere
// such tools are refused. [Widenings] lists the glob grants that Landlock
// enforces as whole directories, for audit.
package script
