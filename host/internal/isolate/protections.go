package isolate

import (
	"fmt"
	"strings"
)

// Protection is one kernel protection and whether it applies on this
// machine, for audit output and call logs.
type Protection struct {
	Name      string `json:"name"`
	Available bool   `json:"available"`
	Detail    string `json:"detail"`
}

// Protection names, in the order Protections lists them.
const (
	ProtLandlock     = "landlock"
	ProtNoNewPrivs   = "no-new-privs"
	ProtUserNS       = "user-namespace"
	ProtNetNS        = "network-namespace"
	ProtPidNS        = "pid-namespace"
	ProtEgress       = "egress-proxy"
	ProtRlimits      = "rlimits"
	ProtUnprivileged = "unprivileged-uid"
	ProtPrivateFS    = "private-filesystem"
	ProtSeccomp      = "seccomp"
)

// Protections describes f as a list: which protections a confined child
// gets on this machine.
func (f Features) Protections() []Protection {
	var ps []Protection
	ll := Protection{Name: ProtLandlock, Available: f.LandlockABI > 0}
	if ll.Available {
		ll.Detail = fmt.Sprintf("ABI %d: file rules from the grant%s", f.LandlockABI, landlockExtras(f.LandlockABI))
	} else {
		ll.Detail = errText(f.LandlockErr)
	}
	ps = append(ps, ll,
		Protection{Name: ProtNoNewPrivs, Available: true, Detail: "set on the spawning thread, inherited by the child"})
	switch {
	case !f.Namespaces:
		ps = append(ps, Protection{Name: ProtUserNS, Detail: errText(f.NamespacesErr)})
	case f.Root:
		ps = append(ps, Protection{Name: ProtUserNS, Available: true,
			Detail: "not used: the host is root, so namespaces are created directly and the child drops to a per-call uid"})
	default:
		ps = append(ps, Protection{Name: ProtUserNS, Available: true, Detail: "unprivileged user namespace owns the child's namespaces"})
	}
	nsDetail := errText(f.NamespacesErr)
	netDetail, pidDetail := nsDetail, nsDetail
	if f.Namespaces {
		netDetail = "fresh network namespace: no interface but a down loopback"
		pidDetail = "fresh PID namespace: the timeout kills every descendant, setsid or not"
	}
	ps = append(ps,
		Protection{Name: ProtNetNS, Available: f.Namespaces, Detail: netDetail},
		Protection{Name: ProtPidNS, Available: f.Namespaces, Detail: pidDetail})
	eg := Protection{Name: ProtEgress, Available: f.Egress,
		Detail: "granted hosts are reached only through the host's allowlisting proxy on the sandbox's own loopback; Landlock allows no other TCP connect"}
	if !f.Egress {
		eg.Detail = "unavailable: needs a root host with namespaces; tools whose grant lists hosts are refused"
	}
	ps = append(ps, eg)
	rl := Protection{Name: ProtRlimits, Available: f.Prlimit != ""}
	if rl.Available {
		rl.Detail = "set by " + f.Prlimit + " before the interpreter starts: as/data, nproc, fsize, nofile, cpu"
	} else {
		rl.Detail = errText(f.PrlimitErr)
	}
	ps = append(ps, rl)
	if f.Root {
		ps = append(ps, Protection{Name: ProtUnprivileged, Available: f.Namespaces,
			Detail: "per-call uid with no capability: the root-owned paths it was granted are mounted idmapped, so they appear owned by it (the system's files keep their owners) (on a file system without idmapped mounts it keeps CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH, bounded by Landlock and the private file system); RLIMIT_NPROC applies"})
		ps = append(ps, Protection{Name: ProtPrivateFS, Available: f.LandlockABI > 0,
			Detail: "a private mount namespace holding only the interpreter's folders, the tool folder, the granted workspace paths, $CACHE and $TMP, read-only unless granted write; $TMP in memory, at most the call's memory limit; nothing else of the host exists"})
	}
	sc := Protection{Name: ProtSeccomp, Available: f.Seccomp,
		Detail: "system-call filter: no mounts or new namespaces, ptrace, keyctl, bpf, userfaultfd, perf events, kernel modules, file handles"}
	if !f.Seccomp {
		sc.Detail = "unavailable: no syscall table for this architecture"
	}
	ps = append(ps, sc)
	return ps
}

func landlockExtras(abi int) string {
	var x []string
	if abi >= 4 {
		x = append(x, "all TCP bind/connect denied")
	}
	if abi >= 6 {
		x = append(x, "signals and abstract unix sockets scoped to the sandbox")
	}
	if len(x) == 0 {
		return ""
	}
	return "; " + strings.Join(x, "; ")
}

func errText(err error) string {
	if err == nil {
		return "unavailable"
	}
	return err.Error()
}
