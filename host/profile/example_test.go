package profile_test

import (
	"fmt"

	"github.com/agenthost/agenthost/host/profile"
)

// ExampleProfile_Resolve selects the tools of an inventory.
func ExampleProfile_Resolve() {
	p, err := profile.Parse([]byte(`{"id": "reader", "tool_ids_inventory": ["fs:read", "text:*"]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	ids, err := p.Resolve([]string{"core:echo", "fs:read", "fs:write", "text:diff", "text:stats"})
	fmt.Println(ids, err)
	// Output: [fs:read text:diff text:stats] <nil>
}
