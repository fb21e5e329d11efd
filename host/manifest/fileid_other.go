//go:build !linux

package manifest

import "os"

// fileID is unused outside Linux: every load hashes the module.
type fileID struct{}

// fileIdentity reports that no identity is known.
func fileIdentity(*os.File) (fileID, bool) { return fileID{}, false }
