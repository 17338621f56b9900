"""One generated module per MCP server: `from mcp.servers.<alias> import *`.

The module mcp.servers.<alias> (server name or alias) is built on import from
the server's tool list: an async function per tool, named by the tool's alias,
with a blocking twin as <function>.sync, and TOOLS, the list_tools entries.
"""

import importlib.abc
import importlib.util
import sys

from .. import runtime

_PREFIX = __name__ + "."


class _ServerModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith(_PREFIX) or "." in fullname[len(_PREFIX):]:
            return None
        key = fullname[len(_PREFIX):]
        if runtime._server_info(key) is None:
            known = ", ".join(s["alias"] for s in runtime._servers) or "none"
            raise ModuleNotFoundError(
                "no MCP server %r in this run (server aliases: %s)" % (key, known), name=fullname)
        return importlib.util.spec_from_loader(fullname, self, origin="<codebridge>/mcp/servers")

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        info = runtime._server_info(module.__name__[len(_PREFIX):])
        tools = runtime.list_tools_sync(info["name"])
        names = []
        for tool in tools:
            f = runtime.tool_function(info["name"], tool)
            f.__module__ = module.__name__
            setattr(module, f.__name__, f)
            names.append(f.__name__)
        module.TOOLS = tools
        module.SERVER = dict(info)
        module.__all__ = names + ["TOOLS"]
        module.__doc__ = "Tools of MCP server %r. %s" % (info["name"], info.get("description") or "")


if not any(isinstance(f, _ServerModules) for f in sys.meta_path):
    sys.meta_path.insert(0, _ServerModules())
