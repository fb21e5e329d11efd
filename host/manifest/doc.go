// Package manifest parses and validates *.tool.json manifests.
//
// [Parse] checks a manifest's bytes against the embedded JSON Schema
// (abi/manifest.schema.json; unknown fields are errors at every level),
// then applies the rules the schema cannot express ([Tool.Validate]): the
// tool ID grammar and reserved namespaces, SemVer, the fields of each
// handler type, file-access path syntax and mounts, and that parameters
// and output compile as JSON Schemas and every example input validates.
// [Load] also reads the file system: the module or script must stay inside
// the manifest's folder (symlinks included) and a wasm module's sha256 must
// match handler.sha256.
//
//	t, err := manifest.Load("toolpacks/core/echo.tool.json")
//	if errors.Is(err, abi.ErrLoadError) { ... } // every error is a *manifest.Error
//	args = t.ParametersSchema().Coerce(args)
//	b, err := t.ReadModule() // the module bytes, re-checked against Digest()
//
// [WriteDigest] rewrites only the sha256 value of a manifest after its
// module was rebuilt. See docs/MANIFEST.md for the field reference.
package manifest
