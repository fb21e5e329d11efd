package prompt

// protocol is the full ACTION protocol section with few-shot examples.
const protocol = `# How to call tools

When you need a tool, end your message with exactly one <ACTION> block. Write your reasoning
before it; everything after </ACTION> is ignored.

<ACTION>
  <tool:id>
    <parameter>value</parameter>
  </tool:id>
</ACTION>

Rules:
- The tool ID is the tag name. Each parameter is a child element; write values as plain text.
- Several calls in one block run in order; after the first failure the rest are skipped.
- A list is written as repeated <item> elements; an object as nested elements.
- Wrap code, markup or any text containing < or & in <![CDATA[ ... ]]>.
- Do not put the block in a code fence or inline code, and do not invent tools or parameters.
- After the block you receive one "Observation:" line per call. If a call failed, read the
  error, fix the call and try again.

Examples of the format (the tool names are illustrative; call only the tools listed above).

One call:
I will count the words first.
<ACTION>
  <text:stats>
    <text>The quick brown fox.</text>
  </text:stats>
</ACTION>

Two calls, a list and code:
<ACTION>
  <core:echo>
    <names><item>Alice</item><item>Bob</item></names>
  </core:echo>
  <text:regex>
    <pattern><![CDATA[a < b && c > d]]></pattern>
    <text>x</text>
  </text:regex>
</ACTION>

Answering without a tool: Write the answer as plain text with no <ACTION> block.
`

// compactProtocol is the short protocol section for Options.Compact.
const compactProtocol = `Rules: one <ACTION> block at the end of your message; calls run in order and stop at the first
failure; lists are repeated <item>; wrap text containing < or & in <![CDATA[...]]>; no code fences.
Example:
<ACTION>
  <core:echo><text>hi</text></core:echo>
</ACTION>
Each call is answered by an "Observation:" line; fix failed calls and retry. No block = final answer.
`
