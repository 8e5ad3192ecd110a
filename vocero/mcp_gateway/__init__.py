"""Enterprise integration plane: the only way to reach MCP servers."""
