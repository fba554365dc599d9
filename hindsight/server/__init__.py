"""The HTTP API (`hindsight serve`) and the MCP server over one memory."""
