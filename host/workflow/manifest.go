package workflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agenthost/agenthost/host/manifest"
)

// Load reads and parses the workflow file at path.
func Load(path string) (*Workflow, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, &manifest.Error{Path: path, Reason: "cannot read", Err: err}
	}
	if !fi.Mode().IsRegular() {
		return nil, &manifest.Error{Path: path, Reason: "not a regular file"}
	}
	if fi.Size() > MaxBytes {
		return nil, &manifest.Error{Path: path, Reason: fmt.Sprintf("the file is %d bytes; the limit is %d", fi.Size(), MaxBytes)}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &manifest.Error{Path: path, Reason: "cannot read", Err: err}
	}
	w, err := Parse(data)
	if err != nil {
		return nil, withPath(err, path)
	}
	return w, nil
}

// Manifest loads the workflow file at path (*.workflow.json) and returns
// the manifest of its tool, workflow:<id>: parameters from
// interfaceInputs, output from interfaceOutputs, tests as examples,
// timeoutMs as the tool's timeout request.
func Manifest(path string) (*manifest.Tool, error) {
	w, err := Load(path)
	if err != nil {
		return nil, err
	}
	doc := map[string]any{
		"toolId":      w.ToolID(),
		"displayName": w.ID,
		"description": w.Description,
		"version":     w.Version,
		"handler":     map[string]any{"type": manifest.HandlerWorkflow, "workflow": filepath.Base(path)},
		"parameters":  w.Parameters(),
		"output":      w.Output(),
	}
	if w.Name != "" {
		doc["displayName"] = w.Name
	}
	if len(w.Tags) > 0 {
		doc["tags"] = w.Tags
	}
	if w.TimeoutMs > 0 {
		doc["securityContext"] = map[string]any{"limits": map[string]any{"timeoutMs": w.TimeoutMs}}
	}
	var examples []manifest.Example
	for i, t := range w.Tests {
		d := t.Description
		if d == "" {
			d = fmt.Sprintf("test %d", i+1)
		}
		examples = append(examples, manifest.Example{Description: d, Input: t.Input, ExpectedOutput: t.ExpectedOutput})
	}
	if len(examples) > 0 {
		doc["examples"] = examples
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, &manifest.Error{Path: path, Reason: "cannot build the manifest", Err: err}
	}
	t, err := manifest.LoadGenerated(b, path)
	if err != nil {
		var me *manifest.Error
		if errors.As(err, &me) && strings.HasPrefix(me.Pointer, "/examples") {
			me.Pointer = "/tests" + strings.TrimPrefix(me.Pointer, "/examples")
		}
		return nil, withPath(err, path)
	}
	return t, nil
}

func withPath(err error, path string) error {
	var me *manifest.Error
	if errors.As(err, &me) {
		me.Path = path
		return me
	}
	return &manifest.Error{Path: path, Reason: err.Error()}
}
