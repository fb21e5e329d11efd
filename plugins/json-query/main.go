// Command json-query is the json:query tool: runs a jq filter (gojq, a
// pure-Go jq) over JSON input and returns every result.
package main

import "github.com/agenthost/agenthost/abi/guest"

func main() {
	guest.Run(Query)
}
