package main

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"runtime/debug"
)

func versionCommand() command {
	return command{
		name: "version", usage: "version [--json]", summary: "print the version, commit, Go and wazero versions",
		flags: func(fs *flag.FlagSet, e *env) { fs.BoolVar(&e.asJSON, "json", false, "print JSON") },
		run:   runVersion,
	}
}

// versionInfo is what `version` prints.
type versionInfo struct {
	Version string `json:"version"`
	Commit  string `json:"commit"`
	Go      string `json:"go"`
	Wazero  string `json:"wazero"`
}

// buildVersion reads the module version, VCS commit and wazero version from
// the binary's build information. A binary built from a checkout reports
// version "(devel)".
func buildVersion() versionInfo {
	v := versionInfo{Version: "(devel)", Commit: "unknown", Go: runtime.Version(), Wazero: "unknown"}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			v.Commit = s.Value
		}
	}
	for _, d := range bi.Deps {
		if d.Path == "github.com/tetratelabs/wazero" {
			v.Wazero = d.Version
		}
	}
	return v
}

func runVersion(_ context.Context, e *env, args []string) error {
	if len(args) != 0 {
		return usageError{"version takes no arguments"}
	}
	v := buildVersion()
	if e.asJSON {
		return e.printJSON(v)
	}
	_, err := fmt.Fprintf(e.stdout, "agenthost %s (commit %s, %s, wazero %s)\n", v.Version, v.Commit, v.Go, v.Wazero)
	return err
}
