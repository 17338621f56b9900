"""codebridge helpers (placeholder)."""
def _install(channel, servers):
    pass
def _globals():
    return {}
