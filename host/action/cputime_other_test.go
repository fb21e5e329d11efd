//go:build !unix

package action_test

import "testing"

// reportCPU reports nothing where getrusage is unavailable.
func reportCPU(*testing.B) func() { return func() {} }
