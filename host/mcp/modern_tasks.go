package mcp

// extTasks names the tasks extension of the 2026-07-28 revision.
const extTasks = "io.modelcontextprotocol/tasks"
