// Package isolate starts a child process confined by the Linux kernel:
// Landlock file and TCP rules, no_new_privs, fresh network and PID
// namespaces (with a user namespace when the host is not root, or a
// per-call unprivileged uid when it is), and rlimits applied before the
// child's first instruction.
//
// Go cannot run code between fork and exec, so [Run] confines a dedicated
// OS thread instead: it locks a goroutine to its thread, sets
// no_new_privs and calls landlock_restrict_self on that thread only, then
// forks the child from it (the child inherits the thread's Landlock
// domain), waits for it there, and lets the thread die with the
// goroutine, never returning it to the Go scheduler. rlimits are set by
// the util-linux prlimit(1) program, which the child executes first and
// which then executes the interpreter, so the limits are in place before
// any tool code runs.
//
// [Probe] reports which of these protections the running kernel offers;
// callers decide what to do when one is missing (the script bridge
// refuses to run unless the policy allows degraded isolation).
package isolate
