package action_test

import (
	"errors"
	"fmt"

	"github.com/agenthost/agenthost/abi"
	"github.com/agenthost/agenthost/host/action"
)

func ExampleParse() {
	out := `I need the weather first.
<ACTION>
  <core:read-state>
    <path>environment.weather</path>
    <names><item>Alice</item><item>Bob</item></names>
    <code><![CDATA[if a < b && c > d { }]]></code>
  </core:read-state>
</ACTION>`
	res, err := action.Parse(out, action.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.ResponseText)
	for _, c := range res.Calls {
		fmt.Println(c.Tool, c.Args["path"], c.Args["names"], c.Args["code"])
	}
	// Output:
	// I need the weather first.
	// core:read-state environment.weather [Alice Bob] if a < b && c > d { }
}

func ExampleParse_malformed() {
	_, err := action.Parse("<ACTION><code:write><code>List<String> x;</code></code:write></ACTION>", action.Options{})
	var ae *abi.Error
	if errors.As(err, &ae) {
		d := ae.Details.(map[string]any)
		fmt.Println(ae.Code, d["line"], d["column"])
		fmt.Println(d["hint"])
	}
	// Output:
	// MALFORMED_ACTION 1 42
	// if <String> is part of a value, not a tag, wrap that value in <![CDATA[...]]>; otherwise close it with </String>
}

func ExampleRender() {
	fmt.Println(action.Render([]action.Call{{Tool: "core:echo", Args: map[string]any{"text": "a < b"}}}))
	// Output:
	// <ACTION>
	//   <core:echo>
	//     <text><![CDATA[a < b]]></text>
	//   </core:echo>
	// </ACTION>
}
