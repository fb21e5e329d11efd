package script

import (
	"sort"
	"strings"

	"github.com/agenthost/agenthost/host/runner"
)

// hidePaths rewrites the host paths a call's logs and error message may
// hold (a traceback naming a file in the workspace or the call's scratch
// folder, an interpreter error naming the dependency cache) to the names
// the manifest uses: $TMP, $CACHE, $WORKSPACE. A result never tells the
// model or the caller where on the host things live; the tool's own folder
// stays as it is (it is the tool's).
func (p *prepared) hidePaths(tmp string, res *runner.Result) {
	pairs := [][2]string{{tmp, "$TMP"}, {p.grant.CacheDir, "$CACHE"}, {p.grant.Workspace, "$WORKSPACE"}, {p.r.cacheDir, "$HOST_CACHE"}}
	sort.Slice(pairs, func(i, j int) bool { return len(pairs[i][0]) > len(pairs[j][0]) }) // nested folders: longest first
	// The tool's folder maps to itself and comes first: a Replacer tries
	// its pairs in order, so a path inside the tool's folder is kept even
	// when that folder lies in the workspace.
	args := []string{p.tool.Dir, p.tool.Dir}
	for _, pr := range pairs {
		if pr[0] != "" && pr[0] != "/" {
			args = append(args, pr[0], pr[1])
		}
	}
	res.Rewrite(strings.NewReplacer(args...))
}
