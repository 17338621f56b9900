"""codebridge's helpers for MCP servers, inside run_python.

`import mcp`, `from mcp import runtime`, and `from mcp.servers.<alias> import *`
all work; the same names are also globals of the code. See
mcp.runtime.capability_summary() for the manual.

This is codebridge's own module, served from memory: it shadows any installed
package named mcp inside the sandbox.
"""

from . import _channel, memory, results, runtime
from .runtime import *  # noqa: F401,F403
from .runtime import ServerProxy

# runtime's names hold those of memory and results too.
__all__ = list(runtime.__all__) + ["runtime", "mcp_servers"]
memory._helpers = frozenset(__all__) | {"mcp"}

mcp_servers = {}  # server name -> ServerProxy


def _install(channel, servers):
    """Connects the helpers to codebridge; called by the runner before user code."""
    _channel.channel = channel
    runtime._servers = []
    for s in servers:
        info = {"name": s["name"], "alias": s.get("alias") or s["name"], "description": s.get("description") or ""}
        if s.get("loaded"):
            info["loaded"] = True
            info["tools"] = list(s.get("tools") or ())
        runtime._servers.append(info)
    mcp_servers.clear()
    for s in runtime._servers:
        mcp_servers[s["name"]] = ServerProxy(s["name"], s["alias"], s["description"])


_installed = None  # the server list last installed, to see changes


def _refresh(servers, namespace):
    """Brings a session's proxies up to date with the servers of this run:
    servers added or removed in the config folder appear or go, as do their
    mcp_<alias> globals (unless the code rebound those names)."""
    global _installed
    runtime._tool_docs.clear()  # tools may have changed since the last run
    runtime._tool_methods.clear()
    if servers == _installed:
        return
    old = {"mcp_" + p.alias: p for p in mcp_servers.values()}
    _install(_channel.channel, servers)
    _installed = servers
    for name, proxy in old.items():
        if namespace.get(name) is proxy:
            del namespace[name]
    for proxy in mcp_servers.values():
        name = "mcp_" + proxy.alias
        if name not in namespace or isinstance(namespace[name], ServerProxy):
            namespace[name] = proxy


def _globals():
    """The names injected into the code's namespace."""
    g = {name: getattr(runtime, name) for name in runtime.__all__}
    g["runtime"] = runtime
    g["mcp_servers"] = mcp_servers
    for proxy in mcp_servers.values():
        g["mcp_" + proxy.alias] = proxy
    return g
