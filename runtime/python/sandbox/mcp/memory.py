"""Memories and saved helpers: what code asks codebridge to keep across
sessions and restarts. Stored by codebridge on the host (never in the
sandbox), reached over the same channel as tool calls. Names as in the
reference bridge. These block; they are quick.

Runs on Python 3.9+.
"""

import inspect
import json

from . import runtime
from .runtime import MCPError

__all__ = [
    "save_memory",
    "load_memory",
    "update_memory",
    "delete_memory",
    "list_memories",
    "memory_exists",
    "save_tool",
    "list_saved_tools",
    "delete_saved_tool",
]


def _call(method, params):
    return runtime._wait(runtime._request(method, params))


def _json(what, value):
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise MCPError("%s must be JSON (dict, list, str, int, float, bool, None), not %s: %s"
                       % (what, type(value).__name__, e), code="bad_arguments")
    return value


def save_memory(key, value, metadata=None):
    """Stores value (anything JSON) under key, for later runs, sessions and
    codebridge restarts. Replaces what the key held."""
    _call("memory_save", {"key": key, "value": _json("the value", value),
                          "metadata": _json("metadata", metadata)})


def load_memory(key, default=None):
    """The value stored under key, or default when there is none."""
    r = _call("memory_load", {"key": key})
    return r.get("value") if r.get("found") else default


def update_memory(key, fn, default=None):
    """Stores fn(current value, or default) under key and returns it."""
    value = fn(load_memory(key, default))
    save_memory(key, value)
    return value


def delete_memory(key):
    """Removes the memory under key; True if there was one."""
    return bool(_call("memory_delete", {"key": key}))


def list_memories():
    """Every memory, without its value: [{key, bytes, updated, metadata?}]."""
    return _call("memory_list", {})


def memory_exists(key):
    """Whether a memory is stored under key."""
    return bool(_call("memory_exists", {"key": key}))


def save_tool(func, name=None, description=None):
    """Saves func's source so that every new session defines it as a global,
    also after codebridge restarts; search_tool_docs finds it by its
    docstring. func must be defined in run_python code (or a file)."""
    if not callable(func):
        raise MCPError("save_tool needs a function, not %s" % type(func).__name__, code="bad_arguments")
    try:
        source = inspect.getsource(func)
    except (OSError, TypeError) as e:
        raise MCPError("cannot read the source of %r (%s): define it with def in run_python code, then save it"
                       % (getattr(func, "__name__", func), e), code="bad_arguments")
    import textwrap
    source = textwrap.dedent(source)
    name = name or func.__name__
    if name != func.__name__:
        source += "\n%s = %s\n" % (name, func.__name__)
    description = description or inspect.getdoc(func) or ""
    _call("tool_save", {"name": name, "source": source, "description": description})
    return name


def list_saved_tools():
    """The saved helpers: [{name, description, updated}]."""
    return _call("tool_list", {})


def delete_saved_tool(name):
    """Removes a saved helper (new sessions no longer define it); True if it existed."""
    return bool(_call("tool_delete", {"name": name}))
