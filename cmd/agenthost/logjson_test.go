package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestLogJSONEveryLine pins --log-json: every stderr line is a JSON object,
// including the CLI's own error messages (plain lines leaked through).
func TestLogJSONEveryLine(t *testing.T) {
	toolpacks, _ := filepath.Abs("../../toolpacks")
	tests := [][]string{
		{"describe", "nope:x"},
		{"list", "--dir", "testdata/badpack"},
		{"invoke", "core:echo", "@testdata/none.json"},
		{"frobnicate"},
		{"audit", "--dir", "testdata/riskpack", "--fail-on", "low"},
		{"--log-level", "info", "invoke", "core:echo", `{"msg":"x"}`, "--dir", toolpacks},
	}
	for _, args := range tests {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			run(context.Background(), append([]string{"--log-json"}, args...), strings.NewReader(""), &stdout, &stderr)
			if stderr.Len() == 0 && args[0] != "--log-level" {
				t.Fatal("no stderr output: the case tests nothing")
			}
			for _, line := range strings.Split(strings.TrimRight(stderr.String(), "\n"), "\n") {
				if line == "" {
					continue
				}
				var v map[string]any
				if err := json.Unmarshal([]byte(line), &v); err != nil {
					t.Errorf("stderr line is not JSON: %q", line)
				}
			}
		})
	}
}
