// Package guestpath resolves the paths a model gives to the file tools
// into guest paths: relative paths are inside /workspace;
// absolute paths are used as given, so /tmp, /tool, /cache and extra
// mounts work. The host enforces what may be read or written; this package
// only gives a path one clean, absolute form.
package guestpath
