"""Generated per-server modules: from mcp.servers.<alias> import *."""
