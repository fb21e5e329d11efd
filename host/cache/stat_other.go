//go:build !unix

package cache

import (
	"io/fs"
	"time"
)

// accessTime reports no access time: Prune then goes by the
// modification time alone.
func accessTime(fs.FileInfo) (time.Time, bool) { return time.Time{}, false }

// checkOwner checks nothing: where files have no Unix owner and mode
// (Windows) the folder's access list is the operator's to set.
func checkOwner(string, fs.FileInfo) error { return nil }
