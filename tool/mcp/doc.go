// Package mcp exposes the tools of Model Context Protocol servers as
// agentrl tools, using the official Go SDK
// (github.com/modelcontextprotocol/go-sdk).
//
// Connect to a server over stdio (a command this package starts) or
// streamable HTTP, list its tools, and add them to a tool.Set:
//
//	c, _ := mcp.ConnectHTTP(ctx, "search", "http://127.0.0.1:8000/mcp", nil)
//	defer c.Close()
//	tools, _ := c.Tools(ctx, nil)
//	set, _ := tool.NewSet(tools...)
//
// Importing the package registers the "mcp" tool class (and verl's
// "verl.tools.mcp_base_tool.MCPBaseTool" as an alias), which reads verl's
// MCP tool config:
//
//	tools:
//	  - class_name: mcp
//	    config: {type: mcp, timeout: 30}
//	    mcp:
//	      mcp_servers_config_path: mcp_servers.json   # {"mcpServers": {"name": {"url": ...} | {"command": ..., "args": [...]}}}
//	      tool_selected_list: [search]
//
// Tool schemas keep the key order the server sent (chat templates render
// them), and call arguments are sent as the exact JSON the model wrote.
// A set loaded from config owns the connections: call tool.Set.Close.
package mcp
