// Package sandboxfs is the file system a WASI guest sees: a wazero
// experimental/sys.FS over one host folder (or, for /tmp, over files in
// memory) that checks the grant's glob rules on every operation, file by
// file, and records every refusal.
//
// An [FS] serves one mount (/workspace, /tool, /cache, /tmp or an extra
// mount). /tmp (a Temp mount) is no host folder: its files live in the
// host's memory for one call, within a byte limit (Config.TempBytes).
// For the other mounts each path is cleaned, then resolved one component at a time:
// symbolic links are read and followed inside the mount only (a link
// whose target is absolute or climbs above the mount is refused), so the
// rules are checked against the canonical path of the file really
// reached, and the operation itself goes through an [os.Root], which
// the kernel-level openat resolution keeps inside the folder even if a
// component is swapped for a symlink concurrently. Guests cannot create
// symbolic links.
//
// [Deny] is mounted at "/" so that any absolute path outside the mounts
// (/etc/passwd, /workspace/../etc) reaches the host and is refused and
// recorded rather than silently failing inside the guest.
//
// Refusals return EACCES to the guest and are recorded in the call's
// [Denials], which the runner turns into PERMISSION_DENIED when the call
// fails.
package sandboxfs
