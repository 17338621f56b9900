"""Memories and saved helpers: what code asks codebridge to keep across
sessions and restarts. Stored by codebridge on the host (never in the
sandbox), reached over the same channel as tool calls.

Names, arguments and return shapes follow the reference bridge
(mcp-server-code-execution-mode), whose helpers are plain functions, so
these block (they are quick) and have no async forms. Differences: values
must be JSON (the reference turned anything else into a string),
delete_memory returns whether the key existed, update_memory keeps the
metadata and loses no concurrent update, and save_tool takes a name and a
description.

Runs on Python 3.9+.
"""

import builtins
import json
import keyword
import math
import sys
import time

# inspect, random and textwrap are imported where they are used: an idle
# session holds only what its code used (inspect alone is half a megabyte).

from ._channel import MCPError, _call

__all__ = [
    "save_memory",
    "load_memory",
    "update_memory",
    "delete_memory",
    "list_memories",
    "memory_exists",
    "get_memory_info",
    "save_tool",
    "list_saved_tools",
    "delete_saved_tool",
]

# bridge/memory.MaxValue: checked here too, so a big value is refused before
# it is sent (a frame over the channel's limit would be refused as a tool
# call's arguments are, with a message about tool calls).
_MAX_VALUE = 1 << 20
_UPDATE_TRIES = 100  # with backoff, some seconds of another run writing the key constantly

# The names of codebridge's helpers in every session, which a saved helper
# must not hide: the package's __all__ and its own name, set by mcp.
_helpers = frozenset()


def _key(key):
    if not isinstance(key, str):
        raise MCPError("a memory key is a str, not %s: e.g. save_memory(%r, value)"
                       % (type(key).__name__, str(key)), code="bad_arguments")
    return key


def _type_name(x):
    t = type(x)
    if t.__module__ == "builtins":
        return t.__qualname__
    return "%s.%s" % (t.__module__, t.__qualname__)


def _not_json(x, path, seen):
    """The first part of x that JSON cannot hold, as (path, description), or None."""
    if x is None or isinstance(x, (str, bool, int)):
        return None
    if isinstance(x, float):
        if math.isnan(x) or math.isinf(x):
            return path, "is float %r, which JSON cannot hold" % x
        return None
    if isinstance(x, (dict, list, tuple)):
        if id(x) in seen:
            return path, "is the %s itself again (a circular reference)" % _type_name(x)
        seen = seen | {id(x)}
        if isinstance(x, dict):
            for k, v in x.items():
                if not (k is None or isinstance(k, (str, bool, int, float))):
                    return path, "is a dict with a key of type %s (keys must be str)" % _type_name(k)
                found = _not_json(v, "%s[%r]" % (path, k), seen)
                if found:
                    return found
        else:
            for i, v in enumerate(x):
                found = _not_json(v, "%s[%d]" % (path, i), seen)
                if found:
                    return found
        return None
    return path, "has type %s" % _type_name(x)


def _encode(what, root, value):
    """value as the JSON codebridge will store, or MCPError naming the part
    that is not JSON: what is e.g. "the value of memory 'k'", root the name
    of value in the path shown, e.g. value['rows'][3]."""
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8", "surrogatepass")
    except (TypeError, ValueError, RecursionError) as e:
        try:
            found = _not_json(value, root, frozenset())
        except RecursionError:
            found = None
        where = "%s %s" % found if found else "%s (%s)" % (str(e), type(e).__name__)
    raise MCPError("%s is not JSON: %s. Memories hold dict, list, str, int, float, bool and None: "
                   "convert it first, e.g. str(x), x.isoformat(), list(x), int(x) or x.tolist()"
                   % (what, where), code="bad_arguments")


def _epoch_fields(info):
    """A memory's description in the reference bridge's shape."""
    return {
        "key": info.get("key"),
        "metadata": info.get("metadata") or {},
        "created_at": info.get("created_at"),
        "updated_at": info.get("updated_at"),
        "bytes": info.get("bytes"),
    }


def save_memory(key, value, metadata=None):
    """Stores value (anything JSON) under key, for later runs, sessions and
    codebridge restarts, replacing what the key held. metadata: optional
    JSON (e.g. {"tags": [...]}), returned by list_memories()."""
    _save(_key(key), value, metadata, None)


def _save(key, value, metadata, if_rev):
    data = _encode("the value of memory %r" % key, "value", value)
    if len(data) > _MAX_VALUE:
        raise MCPError("memory %r is %d bytes of JSON, over the 1 MiB limit of one memory: "
                       "store less, or split it over several keys" % (key, len(data)), code="too_large")
    params = {"key": key, "value": value}
    if metadata is not None:
        _encode("the metadata of memory %r" % key, "metadata", metadata)
        params["metadata"] = metadata
    if if_rev is not None:
        params["if_rev"] = if_rev
    _call("memory_save", params)


def load_memory(key, default=None):
    """The value stored under key, or default when there is none."""
    r = _call("memory_load", {"key": _key(key)})
    return r.get("value") if r.get("found") else default


def get_memory_info(key):
    """Everything about one memory: {key, value, metadata, created_at,
    updated_at, bytes} (times in seconds since the epoch), or None."""
    r = _call("memory_load", {"key": _key(key)})
    if not r.get("found"):
        return None
    info = _epoch_fields(r)
    info["value"] = r.get("value")
    return info


def update_memory(key, updater, default=None):
    """Stores updater(current value, or default when there is none) under
    key and returns it; the metadata stays. If another run changes the key
    meanwhile, updater runs again on the new value, so no update is lost:
    keep updater free of side effects."""
    _key(key)
    for attempt in range(_UPDATE_TRIES):
        r = _call("memory_load", {"key": key})
        value = updater(r.get("value") if r.get("found") else default)
        try:
            _save(key, value, r.get("metadata"), r.get("rev") or 0)
            return value
        except MCPError as e:
            if e.code != "conflict":
                raise
        # Jittered, growing pauses, so writers of one key take turns.
        import random

        time.sleep(random.uniform(0, min(0.1, 0.001 * 2 ** attempt)))
    raise MCPError("memory %r changed under every one of %d tries of update_memory: other runs write it "
                   "constantly; try again later" % (key, _UPDATE_TRIES), code="conflict")


def delete_memory(key):
    """Removes the memory under key; True if there was one."""
    return bool(_call("memory_delete", {"key": _key(key)}))


def list_memories():
    """Every memory, without its value, sorted by key: [{key, metadata,
    created_at, updated_at, bytes}] (times in seconds since the epoch)."""
    return [_epoch_fields(m) for m in _call("memory_list", {}) or ()]


def memory_exists(key):
    """Whether a memory is stored under key."""
    return bool(_call("memory_exists", {"key": _key(key)}))


# --- saved helpers ---------------------------------------------------------


def _check_name(name):
    if not isinstance(name, str) or not name.isidentifier() or not name.isascii() or keyword.iskeyword(name):
        raise MCPError("a saved helper's name must be a Python identifier (ASCII letters, digits, _), not %r"
                       % (name,), code="bad_arguments")
    if name in _helpers or name.startswith("mcp_"):
        raise MCPError("%r is the name of a codebridge helper, which a saved helper must not hide: "
                       "save it under another name, e.g. save_tool(f, name=%r)" % (name, "my_" + name),
                       code="bad_arguments")
    if hasattr(builtins, name):
        raise MCPError("%r is a Python builtin, which a saved helper must not hide in every session: "
                       "save it under another name, e.g. save_tool(f, name=%r)" % (name, "my_" + name),
                       code="bad_arguments")


def _what(x):
    import inspect

    if inspect.isbuiltin(x) or inspect.ismethoddescriptor(x):
        return "the builtin %s" % getattr(x, "__name__", x)
    if inspect.ismethod(x):
        return "a method (bound to an object)"
    if inspect.isclass(x):
        return "a class (%s): save a function that defines and returns it, or the functions that use it" % x.__name__
    return "a %s" % _type_name(x)


def _unsaved_globals(func, name):
    """Globals func uses that a new session will not have: not codebridge's
    helpers, nor saved helpers, nor func itself."""
    import inspect

    try:
        used = inspect.getclosurevars(func).globals
    except (TypeError, ValueError):
        return []
    helpers = _helpers | {name}
    names = [n for n in used if n not in helpers and not n.startswith("mcp_")]
    if names:
        try:
            saved = {t.get("name") for t in list_saved_tools()}
        except MCPError:
            saved = set()
        names = [n for n in names if n not in saved]
    return sorted(names)


def save_tool(func, name=None, description=None):
    """Saves the source of func (a function defined with def in run_python
    code) so that every new session defines it as a global, also after
    codebridge restarts; search_tool_docs finds it by its description
    (default: its docstring). name defaults to func's name. Returns the name."""
    import inspect
    import textwrap

    if not inspect.isfunction(func):
        raise MCPError("save_tool saves a function defined with def in your code, not %s" % _what(func),
                       code="bad_arguments")
    own = func.__name__
    if own == "<lambda>":
        raise MCPError("save_tool cannot save a lambda: define it with def, e.g. def f(x): return ..., "
                       "then save_tool(f)", code="bad_arguments")
    if func.__code__.co_freevars:
        raise MCPError("%s uses variables of the function it was defined in (%s), which a new session will not "
                       "have: define it at the top level of your code, then save it"
                       % (own, ", ".join(func.__code__.co_freevars)), code="bad_arguments")
    name = own if name is None else name
    _check_name(name)
    try:
        source = inspect.getsource(func)
    except (OSError, TypeError) as e:
        raise MCPError("cannot read the source of %s (%s): define it with def in run_python code, then save it"
                       % (own, e), code="bad_arguments")
    source = textwrap.dedent(source).replace("\r\n", "\n").replace("\r", "\n")
    if source.startswith("@"):
        raise MCPError("save_tool does not save decorators (they would run in every new session): save the "
                       "undecorated function, and decorate it where you use it", code="bad_arguments")
    if name != own:
        # codebridge keeps exactly one def of the saved name: rename it.
        import re
        source = re.sub(r"\A((?:async\s+)?def\s+)%s\b" % re.escape(own), lambda m: m.group(1) + name, source, count=1)
    try:
        compile(source, "<saved tool %s>" % name, "exec")
    except SyntaxError as e:
        raise MCPError("the source of %s does not compile on its own (%s): define it at the top level of "
                       "your code, then save it" % (own, e), code="bad_arguments")
    if description is None:
        description = inspect.getdoc(func) or ""
    try:
        signature = name + str(inspect.signature(func))
    except (TypeError, ValueError):
        signature = name + "(...)"
    missing = _unsaved_globals(func, name)
    _call("tool_save", {"name": name, "source": source, "description": str(description), "signature": signature})
    if missing:
        sys.stderr.write("save_tool: %s uses %s, which a new session will not define: import modules inside the "
                         "function, and save the helpers it calls too\n" % (name, ", ".join(missing)))
    return name


def list_saved_tools():
    """The saved helpers, sorted by name: [{name, description, signature,
    updated_at}] (seconds since the epoch)."""
    return _call("tool_list", {}) or []


def delete_saved_tool(name):
    """Removes a saved helper (new sessions no longer define it; this one
    keeps it); True if it existed."""
    return bool(_call("tool_delete", {"name": name}))
