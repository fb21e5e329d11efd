package abi

import (
	"embed"
	"fmt"
)

//go:embed *.schema.json
var schemas embed.FS

// Schema returns the embedded JSON Schema with the given file name, for
// example "manifest.schema.json", "policy.schema.json" or
// "envelope.schema.json".
func Schema(name string) ([]byte, error) {
	b, err := schemas.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("abi schema %s: %w", name, err)
	}
	return b, nil
}
