//go:build linux && !amd64

package isolate

// No syscall table here yet: Features reports seccomp as unavailable.
const (
	seccompAuditArch = 0
	seccompX32Bit    = 0
	seccompClone     = 0
	seccompClone3    = 0
)

var seccompDenied []uintptr
