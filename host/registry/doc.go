// Package registry is the tool table of one host: tools by ID
// and by id@version, duplicate detection that names both files, the
// manifests that failed to load, and did-you-mean suggestions for unknown
// IDs.
//
// A [Registry] is a value owned by a host; there is no global table, so two
// hosts in one process never interfere:
//
//	r := registry.New()
//	n, failures := r.LoadDir("toolpacks")
//	t, err := r.Lookup("core:echo")       // highest SemVer version
//	t, err = r.Lookup("core:echo@1.0.0")  // one version
//
// Lookup errors are *abi.Error values: UNKNOWN_TOOL (with suggestions) or
// LOAD_ERROR (the manifest exists but is broken).
package registry
