//go:build !wasip1

package guest

// register reports false: outside wasip1 there is no reactor, so Run
// always serves stdin (see reactor_wasip1.go).
func register(handler, func()) bool { return false }
