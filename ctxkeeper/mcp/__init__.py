"""The MCP door: the stdio JSON-RPC server, the tool registry and argument checks."""
