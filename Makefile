# agenthost. `make` lists the targets. Recipes stay one line each: any logic
# lives in Go (plugins/internal/build builds the toolpacks, cmd/agenthost
# rewrites their digests). Tool versions are pinned and run with
# `go run module@version`, which needs only the Go module proxy.

GO ?= go
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
FUZZTIME ?= 10s
SOAK ?= 2m
BENCH_OUT ?= bench.txt

.DEFAULT_GOAL := help
.PHONY: help build toolpacks plugins guests demo test soak bench fuzz lint fmt fmtcheck check clean

help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z]+:.*## / {printf "  %-10s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## build the CLI into bin/agenthost
	$(GO) build -o bin/agenthost ./cmd/agenthost

toolpacks: ## build every plugin into toolpacks/ (GOOS=wasip1) and rewrite the manifests' sha256
	$(GO) run ./plugins/internal/build -toolpacks toolpacks -plugins plugins
	$(GO) run ./cmd/agenthost validate --write-digests toolpacks

plugins: toolpacks ## alias of toolpacks

guests: ## build the example guests in C, Rust and AssemblyScript (examples/guests); a missing toolchain is skipped with a note
	$(GO) run ./plugins/internal/guests -dir examples/guests && $(GO) run ./cmd/agenthost validate --write-digests examples/guests

demo: toolpacks build ## run the tool calls of an LLM output, agents on a replay (one with a profile and a workflow), the tools for an MCP client; audit
	$(GO) run ./cmd/agenthost exec --dir toolpacks --policy examples/demo/policy.yaml testdata/llm/demo.txt
	@echo "--- what fs:write saved in examples/demo/workspace/out/plan.md:"; cat examples/demo/workspace/out/plan.md; echo
	@echo "--- an agent run on a replayed transcript (examples/agent/demo.jsonl):"
	$(GO) run ./cmd/agenthost run --dir toolpacks --provider replay --replay examples/agent/demo.jsonl "Count the words and hash a word."
	@echo "--- an agent profile: its own prompt, model and tool inventory; it calls a workflow (toolpacks/workflows) whose two nodes run in parallel:"
	$(GO) run ./cmd/agenthost run --dir toolpacks --profile examples/agent/text-analyst.profile.json "Fingerprint this text."
	@echo "--- an MCP client (the official Go SDK) lists and calls the tools over 'agenthost mcp':"
	$(GO) run ./examples/mcpclient -agenthost bin/agenthost -dir toolpacks
	$(GO) run ./cmd/agenthost audit --dir toolpacks

test: toolpacks guests ## run all tests with the race detector
	$(GO) test -race -timeout 30m ./...

soak: toolpacks ## mixed concurrent calls, cancels, timeouts and Close during calls for a few minutes (SOAK=2m); not part of check
	AGENTHOST_SOAK=1 AGENTHOST_SOAK_DURATION=$(SOAK) $(GO) test -run '^TestSoak$$' -count 1 -timeout 30m -v ./host

bench: toolpacks ## run every benchmark 10 times into bench.txt (BENCH_OUT=...), for benchstat
	$(GO) test -run '^$$' -bench . -benchmem -count 10 ./... > $(BENCH_OUT)

fuzz: ## run each fuzz target for 10s (FUZZTIME=...)
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./host/action
	$(GO) test -run '^$$' -fuzz '^FuzzManifest$$' -fuzztime $(FUZZTIME) ./host/manifest
	$(GO) test -run '^$$' -fuzz '^FuzzPolicyGlob$$' -fuzztime $(FUZZTIME) ./host/policy
	$(GO) test -run '^$$' -fuzz '^FuzzHostRule$$' -fuzztime $(FUZZTIME) ./host/policy
	$(GO) test -run '^$$' -fuzz '^FuzzCoerce$$' -fuzztime $(FUZZTIME) ./host/schema
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./host/workflow
	$(GO) test -run '^$$' -fuzz '^FuzzEdge$$' -fuzztime $(FUZZTIME) ./host/mcp
	$(GO) test -run '^$$' -fuzz '^FuzzMemTmp$$' -fuzztime $(FUZZTIME) ./host/internal/sandboxfs
	$(GO) test -run '^$$' -fuzz '^FuzzRedact$$' -fuzztime $(FUZZTIME) ./host/credential
	$(GO) test -run '^$$' -fuzz '^FuzzArchive$$' -fuzztime $(FUZZTIME) ./host/toolpack
	$(GO) test -run '^$$' -fuzz '^FuzzProgram$$' -fuzztime $(FUZZTIME) ./plugins/code-starlark
	$(GO) test -run '^$$' -fuzz '^FuzzMatch$$' -fuzztime $(FUZZTIME) ./host/approval
	$(GO) test -run '^$$' -fuzz '^FuzzImports$$' -fuzztime $(FUZZTIME) ./host/audit
	$(GO) test -run '^$$' -fuzz '^FuzzVerify$$' -fuzztime $(FUZZTIME) ./host/credential
	$(GO) test -run '^$$' -fuzz '^FuzzInstrument$$' -fuzztime $(FUZZTIME) ./host/internal/meter
	$(GO) test -run '^$$' -fuzz '^FuzzOpen$$' -fuzztime $(FUZZTIME) ./host/internal/sandboxfs
	$(GO) test -run '^$$' -fuzz '^FuzzStreams$$' -fuzztime $(FUZZTIME) ./host/llm
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) ./host/receipt
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./host/receipt
	$(GO) test -run '^$$' -fuzz '^FuzzName$$' -fuzztime $(FUZZTIME) ./host/wire

lint: ## go vet (host, macOS, Windows and wasip1) and staticcheck
	$(GO) vet ./...
	GOOS=wasip1 GOARCH=wasm $(GO) vet ./abi/... ./plugins/...
	GOOS=darwin GOARCH=arm64 $(GO) vet ./...
	GOOS=windows GOARCH=amd64 $(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

fmt: ## format every Go file
	$(GO) fmt ./...

fmtcheck: ## fail if a Go file is not gofmt-formatted
	@test -z "$$(gofmt -l .)" || { gofmt -l .; echo 'run make fmt'; exit 1; }

check: fmtcheck lint test ## what CI runs: fmtcheck, lint, test, then go.mod/go.sum must be tidy
	$(GO) mod tidy
	git diff --exit-code go.mod go.sum

clean: ## remove bin/, the built toolpack and example-guest modules and bench.txt
	rm -rf bin $(BENCH_OUT)
	find toolpacks examples/guests -name '*.wasm' -delete
