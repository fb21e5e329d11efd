// Command norun is a reactor whose main never calls guest.Run: the host
// must refuse it at Prepare.
package main

import "github.com/agenthost/agenthost/abi/guest"

func main() {
	guest.Logf("main returns without guest.Run")
}
