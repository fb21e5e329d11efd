// Command native is a host application that adds two Go functions as
// tools next to the first-party toolpacks: clock:now (pure Go) and
// notes:count (reads the workspace through host.FS, so it sees only what
// its grant allows). It runs one model turn that calls a Go tool and a
// WASM tool and prints the observation.
package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/manifest"
)

type nowArgs struct {
	Zone string `json:"zone" jsonschema:"an IANA time zone, e.g. Europe/Paris"`
}

type nowResult struct {
	Zone   string `json:"zone"`
	Offset string `json:"utcOffset"`
}

type countArgs struct {
	Suffix string `json:"suffix" jsonschema:"file name suffix, e.g. .md"`
}

type countResult struct {
	Files int `json:"files"`
}

// tools are the application's Go tools.
func tools() []host.Tool {
	now := host.Func(host.FuncSpec{ID: "clock:now", Description: "The UTC offset of an IANA time zone right now."},
		func(ctx context.Context, a nowArgs) (nowResult, error) {
			loc, err := time.LoadLocation(a.Zone)
			if err != nil {
				return nowResult{}, err
			}
			return nowResult{Zone: a.Zone, Offset: time.Now().In(loc).Format("-07:00")}, nil
		})
	count := host.Func(host.FuncSpec{
		ID:              "notes:count",
		Description:     "Counts the workspace files with a name suffix.",
		SecurityContext: &manifest.SecurityContext{FileAccess: &manifest.FileAccess{AllowRead: []string{"examples/**"}}},
	},
		func(ctx context.Context, a countArgs) (countResult, error) {
			n := 0
			err := fs.WalkDir(host.FS(ctx), ".", func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() && strings.HasSuffix(p, a.Suffix) {
					n++
				}
				return err
			})
			return countResult{Files: n}, err
		})
	return []host.Tool{now, count}
}

const modelOutput = `Let me check the clock in UTC, count the example READMEs and their words.
<ACTION>
  <clock:now><zone>UTC</zone></clock:now>
  <notes:count><suffix>README.md</suffix></notes:count>
  <text:stats><text>native tools and WASM tools side by side</text><top>1</top></text:stats>
</ACTION>`

func main() {
	ctx := context.Background()
	h, err := host.New(ctx, host.Options{Dirs: []string{"toolpacks"}, Tools: tools()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	defer h.Close(ctx)
	turn := h.Exec(ctx, modelOutput)
	fmt.Println(turn.Observation)
}
