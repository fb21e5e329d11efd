package audit_test

import (
	"fmt"
	"os"

	"github.com/agenthost/agenthost/host/audit"
	"github.com/agenthost/agenthost/host/manifest"
	"github.com/agenthost/agenthost/host/policy"
)

func ExampleBuild() {
	p, err := policy.Parse([]byte(`{"workspace": "/srv/work", "networkAccess": {"allowHosts": ["*.example.com"]}}`), "/etc/policy.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	t := &manifest.Tool{
		ToolID: "web:get", Version: "1.0.0", Path: "/tp/web/get.tool.json",
		Handler: manifest.Handler{Type: manifest.HandlerWasm, Module: "get.wasm", SHA256: "ab12"},
		SecurityContext: &manifest.SecurityContext{
			NetworkAccess: &manifest.NetworkAccess{AllowHosts: []string{"api.example.com", "evil.org"}},
		},
	}
	r := audit.Build([]audit.Entry{{Tool: t, Grant: p.Grant(t, nil)}}, audit.Environment{})
	if err := r.Write(os.Stdout, audit.FormatText); err != nil {
		fmt.Println(err)
	}
	// Output:
	// agenthost audit: 1 tool, 0 denied, 1 with denials, 1 with risk flags, 0 load errors
	//
	// web:get 1.0.0  wasm (wasi-command)
	//   manifest:  /tp/web/get.tool.json
	//   module:    get.wasm
	//   digest:    sha256:ab12
	//   workspace: /srv/work
	//   read         requested: -
	//                granted:   $TOOL/**, $TMP/**
	//   write        requested: -
	//                granted:   $TMP/**
	//   network      requested: api.example.com, evil.org
	//                granted:   api.example.com
	//   env          requested: -
	//                granted:   -
	//   limits       requested: -
	//                granted:   timeout 10s, memory 256 MiB, output 1 MiB, fuel unmetered
	//   denials:
	//     - networkAccess.allowHosts evil.org: not covered by the policy's networkAccess.allowHosts
	//   risks:
	//     ! network access: api.example.com
}
