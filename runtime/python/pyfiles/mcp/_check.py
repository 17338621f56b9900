"""The argument check before a run: the run's tool calls, read from its
source, checked against the tools' schemas before any line runs.

A call is checked when its target is plain in the source: a proxy
(mcp_<alias>.<tool>(...), .sync.<tool>, .call("tool", ...), mcp_servers["name"]),
call_tool / call_tool_sync (as globals, runtime.* or mcp.*) with a server and
tool given as strings and the arguments as a dict display, and a function
imported by name from mcp.servers.<alias>. Names bound by the code itself are
followed only through imports of mcp and `x = <proxy>`; any other rebinding
leaves the name unchecked. A call in the body of a try with an except
clause is left to its own check when it is made: the code handles its
failure itself. Argument names are checked whatever their values;
values only when they are literals. Missing required arguments only when every
argument is written out (no ** and no non-string keys).

Runs on Python 3.9+.
"""

import ast
import json
import sys

from . import _channel, runtime
from ._channel import MCPError

KIND = "argument_check"  # the failure kind of a run this check stopped
MAX_TOOLS = 64  # distinct tools asked about per run; further ones go unchecked
MAX_PROBLEMS = 20  # reported per run


class ArgumentCheckError(MCPError):
    """A run's tool calls do not match the tools' signatures: nothing ran."""

    __module__ = "mcp"


class _Tool:
    """A statically resolved tool function: server as called, tool name;
    function: imported from mcp.servers.<alias> (it has a .sync twin)."""

    def __init__(self, server, tool, function=False):
        self.server = server
        self.tool = tool
        self.function = function


class _ToolModule:
    """mcp.servers.<key>, not imported: importing lists the server's tools."""

    def __init__(self, key):
        self.key = key


class _Method:
    """A helper method of a proxy, such as call or call_sync."""

    def __init__(self, proxy, name):
        self.proxy = proxy
        self.name = name


_UNKNOWN = object()
_SERVERS = object()  # the package mcp.servers, not imported


def check(src, tree, namespace):
    """Raises ArgumentCheckError if a call in tree (the run's module AST)
    does not match its tool's schema; returns the number of calls checked."""
    calls = sorted(_calls(tree, _bindings(tree, namespace), namespace),
                   key=lambda c: (c[0].lineno, c[0].col_offset))
    if not calls:
        return 0
    docs = _fetch({(c[1], c[2]) for c in calls})
    problems = []
    checked = 0
    for node, server, tool, args, complete, label in calls:
        doc = docs.get((server, tool))
        if doc is None:
            continue
        checked += 1
        if isinstance(doc, MCPError):  # unknown_tool
            problems.append("line %d: %s: %s" % (node.lineno, label % "...", doc.message))
            continue
        for shown, why in _problems(doc, args, complete):
            problems.append("line %d: %s: %s\n    signature: %s" % (
                node.lineno, label % _show(src, shown), why, doc.get("signature", "")))
    if problems:
        more = len(problems) - MAX_PROBLEMS
        lines = problems[:MAX_PROBLEMS] + (["and %d more" % more] if more > 0 else [])
        raise ArgumentCheckError(
            "codebridge checked this run's tool calls against the tools' signatures before running it; "
            "nothing ran (not even the lines before these):\n" + "\n".join(lines),
            code="bad_arguments", data={"problems": problems})
    return checked


def _show(src, shown):
    """The argument at fault as written: a keyword node, a dict's (key,
    value) nodes, or None for the call as a whole."""
    if shown is None:
        return "..."
    if isinstance(shown, tuple):
        k, v = (ast.get_source_segment(src, n) for n in shown)
        text = "%s: %s" % (k, v) if k and v else None
    else:
        text = ast.get_source_segment(src, shown)
    if not text:
        return "..."
    return text if len(text) <= 60 else text[:57] + "..."


# --- what names stand for ---------------------------------------------------


def _bindings(tree, namespace):
    """name -> the object it stands for in the run (or _UNKNOWN), for the
    names the code binds itself; other names are read from namespace. A name
    bound more than once to different things stands for _UNKNOWN."""
    seen = {}
    aliases = set()  # ids of the Name nodes that `x = <name>` binds

    def bind(name, value):
        if name in seen and seen[name] is not value:
            value = _UNKNOWN
        seen[name] = value

    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and isinstance(node.value, (ast.Name, ast.Attribute, ast.Subscript)):
            aliases.add(id(node.targets[0]))
            bind(node.targets[0].id, _Alias(node.value))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                bind(a.asname or a.name.split(".")[0], _module(a.name if a.asname else a.name.split(".")[0]))
        elif isinstance(node, ast.ImportFrom):
            for a in node.names:
                if a.name != "*":
                    bind(a.asname or a.name, _from(None if node.level else node.module, a.name))
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            if id(node) not in aliases:
                bind(node.id, _UNKNOWN)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bind(node.name, _UNKNOWN)
        elif isinstance(node, ast.arg):
            bind(node.arg, _UNKNOWN)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bind(node.name, _UNKNOWN)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for n in node.names:
                bind(n, _UNKNOWN)
    # An alias is followed when it names a proxy without going through
    # another alias: `gh = mcp_github`, `s = mcp_github.sync`.
    plain = {k: (_UNKNOWN if isinstance(v, _Alias) else v) for k, v in seen.items()}
    for name, value in seen.items():
        if isinstance(value, _Alias):
            target = _resolve(value.node, plain, namespace)
            plain[name] = target if _is_proxy(target) else _UNKNOWN
    return plain


class _Alias:
    """`x = <expression>`: x stands for what the expression stands for."""

    def __init__(self, node):
        self.node = node


def _module(name):
    """The object `import name` binds, for codebridge's own modules."""
    if name == "mcp" or name.startswith("mcp."):
        if name.startswith("mcp.servers."):
            return _ToolModule(name[len("mcp.servers."):]) if name.count(".") == 2 else _UNKNOWN
        return sys.modules.get(name, _UNKNOWN)
    return _UNKNOWN


def _from(module, name):
    """The object `from module import name` binds, for codebridge's modules."""
    if module is None:
        return _UNKNOWN
    if module.startswith("mcp.servers.") and module.count(".") == 2:
        info = runtime._server_info(module[len("mcp.servers."):])
        return _Tool(info["name"], name, function=True) if info else _UNKNOWN
    if module in ("mcp", "mcp.runtime"):
        obj = getattr(sys.modules.get(module), name, _UNKNOWN)
        return obj
    return _UNKNOWN


def _function(obj):
    """A tool function an earlier run imported from mcp.servers.<alias> as
    the tool it calls; any other object as it is."""
    module = getattr(obj, "__module__", None)
    if callable(obj) and isinstance(module, str) and module.startswith("mcp.servers."):
        tool, server = getattr(obj, "tool", None), getattr(sys.modules.get(module), "SERVER", None)
        if isinstance(tool, dict) and isinstance(server, dict) and "name" in tool:
            return _Tool(server.get("name"), tool["name"], function=True)
    return obj


def _is_proxy(obj):
    return isinstance(obj, (runtime.ServerProxy, runtime._SyncTools))


def _resolve(node, names, namespace):
    """What an expression stands for, when the source says it plainly."""
    if isinstance(node, ast.Name):
        if node.id in names:
            return names[node.id]
        return _function(namespace.get(node.id, _UNKNOWN))
    if isinstance(node, ast.Attribute):
        base = _resolve(node.value, names, namespace)
        if base is _UNKNOWN:
            return _UNKNOWN
        if isinstance(base, runtime.ServerProxy):
            if node.attr == "sync":
                return base.sync
            if node.attr in _PROXY_ATTRS:
                return _Method(base, node.attr)
            return _Tool(base.name, node.attr)
        if isinstance(base, runtime._SyncTools):
            return _Tool(base._server, node.attr)
        if isinstance(base, _Tool) and base.function and node.attr == "sync":
            return _Tool(base.server, base.tool)
        if isinstance(base, _ToolModule):
            info = runtime._server_info(base.key)
            return _Tool(info["name"], node.attr, function=True) if info else _UNKNOWN
        if isinstance(base, type(sys)) and (base.__name__ == "mcp" or base.__name__.startswith("mcp.")):
            if base.__name__ == "mcp" and node.attr == "servers":
                return _SERVERS
            return getattr(base, node.attr, _UNKNOWN)
        if base is _SERVERS:
            return _ToolModule(node.attr)
        return _UNKNOWN
    if isinstance(node, ast.Subscript):
        base = _resolve(node.value, names, namespace)
        key = node.slice
        if isinstance(key, ast.Index):  # Python 3.8
            key = key.value
        mcp = sys.modules.get("mcp")
        if mcp is not None and base is getattr(mcp, "mcp_servers", None) and isinstance(key, ast.Constant) \
                and isinstance(key.value, str):
            return base.get(key.value, _UNKNOWN)
    return _UNKNOWN


_PROXY_ATTRS = frozenset(a for a in dir(runtime.ServerProxy) if not a.startswith("__")) | {"name", "alias", "description", "sync"}


def _string(node):
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


_TRY = (ast.Try, ast.TryStar) if hasattr(ast, "TryStar") else (ast.Try,)


def _calls(tree, names, namespace):
    """(node, server, tool, args, complete, label) of each call of a tool in
    tree whose target is plain; args is [(name, value node, shown)], label
    the call with %s where its arguments go."""
    call_tools = (runtime.call_tool, runtime.call_tool_sync)
    handled = set()  # calls in a try with an except: the code handles their failure itself
    for node in ast.walk(tree):
        if isinstance(node, _TRY) and node.handlers:
            for stmt in node.body:
                handled.update(id(n) for n in ast.walk(stmt) if isinstance(n, ast.Call))
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or id(node) in handled:
            continue
        target = _resolve(node.func, names, namespace)
        if target is _UNKNOWN:
            continue
        func = ast.unparse(node.func).replace("%", "%%")
        if isinstance(target, _Tool):
            if node.args:
                continue  # positional arguments: the call itself says what is wrong
            args, complete = _keywords(node.keywords)
            yield node, target.server, target.tool, args, complete, func + "(%s)"
        elif isinstance(target, _Method) and target.name in ("call", "call_sync"):
            tool = _string(node.args[0]) if len(node.args) == 1 else None
            if tool is None:
                continue
            args, complete = _keywords(node.keywords)
            yield node, target.proxy.name, tool, args, complete, "%s(%s, %%s)" % (func, json.dumps(tool).replace("%", "%%"))
        elif any(target is f for f in call_tools):
            pos = list(node.args)
            kw = {k.arg: k.value for k in node.keywords if k.arg}
            if any(k.arg is None for k in node.keywords) or any(isinstance(a, ast.Starred) for a in pos):
                continue
            server = _string(pos[0]) if pos else _string(kw.get("server"))
            tool = _string(pos[1]) if len(pos) > 1 else _string(kw.get("tool"))
            if server is None or tool is None or runtime._server_info(server) is None:
                continue  # an unknown server: the call says so
            given = pos[2] if len(pos) > 2 else kw.get("arguments")
            if given is None or (isinstance(given, ast.Constant) and given.value is None):
                args, complete = [], True
            elif isinstance(given, ast.Dict):
                args, complete = _entries(given)
            else:
                continue
            yield node, server, tool, args, complete, ("%s(%s, %s, {%%s})" % (
                func, json.dumps(server), json.dumps(tool).replace("%", "%%")))


def _keywords(keywords):
    args, complete = [], True
    for k in keywords:
        if k.arg is None:
            complete = False  # **kwargs
        else:
            args.append((k.arg, k.value, k))
    return args, complete


def _entries(d):
    args, complete = [], True
    for k, v in zip(d.keys, d.values):
        name = _string(k) if k is not None else None
        if name is None:
            complete = False  # **other or a key that is no string
        else:
            args.append((name, v, (k, v)))
    return args, complete


# --- the tools' docs ---------------------------------------------------------


def _fetch(keys):
    """The full docs of each (server, tool), asked for all at once (every
    request is sent before any reply is awaited): a doc, an MCPError for an
    unknown tool, or None when the host could not answer (not checked). The
    docs are kept for the calls' own check and for help()."""
    ch = _channel.channel
    if ch is None:
        return {}
    keys = sorted(keys)[:MAX_TOOLS]
    pending = [(key, ch.request("query_tool_docs", {"server": key[0], "tool": key[1], "detail": "full"}))
               for key in keys if key not in runtime._tool_docs]
    out = {}
    for key, call in pending:
        try:
            docs = ch.wait(call)
        except MCPError as e:
            if e.code == "unknown_tool":
                out[key] = e
            runtime._tool_docs[key] = runtime._START_FAILED if e.code == "server_failed" else None
            continue
        doc = docs[0] if isinstance(docs, list) and docs and isinstance(docs[0], dict) else None
        runtime._tool_docs[key] = doc
    for key in keys:
        if key not in out:
            doc = runtime._tool_docs.get(key)
            out[key] = doc if isinstance(doc, dict) and "signature" in doc else None
    return out


# --- the checks --------------------------------------------------------------


def _problems(doc, args, complete):
    """(argument shown, what is wrong) of each mismatch of a call with doc."""
    schema = doc.get("inputSchema") or {}
    props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    params = doc.get("params") or []
    by_name = {}
    for p in params:
        by_name[p["name"]] = p["name"]
        by_name.setdefault(p["alias"], p["name"])
    extra = schema.get("additionalProperties")
    closed = extra in (None, False)
    out = []
    given = set()
    for name, value, shown in args:
        real = by_name.get(name)
        if real is None:
            if closed:
                import difflib

                close = difflib.get_close_matches(name, [p["alias"] for p in params], n=1)
                hint = '; did you mean "%s"?' % close[0] if close else ""
                out.append((shown, 'no argument "%s"%s' % (name, hint)))
            continue
        given.add(real)
        try:
            literal = ast.literal_eval(value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            continue  # not a literal: only its name is checked
        why = _mismatch(literal, props.get(real), schema, 1)
        if why:
            out.append((shown, '"%s" %s' % (name, why)))
    if complete:
        missing = [p["alias"] for p in params if p["required"] and p["name"] not in given]
        if missing:
            out.append((None, "missing the required argument%s %s" % (
                "s" if len(missing) > 1 else "", ", ".join('"%s"' % m for m in missing))))
    return out


_JSON = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", tuple: "array",
         dict: "object", type(None): "null"}
_PY = {"boolean": "bool", "integer": "int", "number": "float", "string": "str", "array": "list", "object": "dict",
       "null": "None"}


def _types(value):
    """The JSON types value has, or None when it is no JSON value."""
    t = _JSON.get(type(value))
    if t is None:
        return None
    if t == "integer":
        return {"integer", "number"}
    if t == "number" and value == value and value not in (float("inf"), float("-inf")) and value.is_integer():
        return {"number", "integer"}
    return {t}


def _deref(s, root):
    ref = s.get("$ref") if isinstance(s, dict) else None
    if isinstance(ref, str):
        for prefix, key in (("#/$defs/", "$defs"), ("#/definitions/", "definitions")):
            if ref.startswith(prefix):
                target = (root.get(key) or {}).get(ref[len(prefix):])
                return target if isinstance(target, dict) else None
        return None
    return s


def _same(a, b):
    """JSON equality: True is not 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


def _mismatch(value, s, root, depth):
    """Why value does not fit schema s, or "" (also when it cannot tell)."""
    s = _deref(s, root)
    if not isinstance(s, dict):
        return ""
    have = _types(value)
    if have is None:
        return ""
    for key in ("anyOf", "oneOf"):
        branches = s.get(key)
        if isinstance(branches, list) and branches:
            whys = [_mismatch(value, b, root, depth) for b in branches]
            if all(whys):
                # One branch of the value's type: its reason says more.
                typed = [w for b, w in zip(branches, whys) if _type_fits(have, _deref(b, root))]
                if len(typed) == 1:
                    return typed[0]
                return "is %s, which fits none of %s" % (_describe(value), _union(branches, root))
    if "const" in s and not _same(value, s["const"]):
        return "is %s; the tool takes only %s" % (_describe(value), json.dumps(s["const"]))
    enum = s.get("enum")
    if isinstance(enum, list) and enum and not any(_same(value, e) for e in enum):
        return "is %s, not one of %s" % (_describe(value), ", ".join(json.dumps(e) for e in enum))
    want = s.get("type")
    wants = {want} if isinstance(want, str) else set(w for w in want if isinstance(w, str)) if isinstance(want, list) else set()
    if wants and not (have & wants):
        return "is %s; the tool wants %s" % (_describe(value), " or ".join(_name(w) for w in sorted(wants)))
    if depth <= 0:
        return ""
    if isinstance(value, (list, tuple)) and isinstance(s.get("items"), dict):
        for i, item in enumerate(value):
            why = _mismatch(item, s["items"], root, depth - 1)
            if why:
                return "[%d] %s" % (i, why)
    if isinstance(value, dict) and isinstance(s.get("properties"), dict):
        for k, v in value.items():
            if k in s["properties"]:
                why = _mismatch(v, s["properties"][k], root, depth - 1)
                if why:
                    return '["%s"] %s' % (k, why)
    return ""


def _type_fits(have, s):
    """Whether schema s names one of the JSON types in have."""
    want = s.get("type") if isinstance(s, dict) else None
    wants = {want} if isinstance(want, str) else set(want) if isinstance(want, list) else set()
    return bool(have & wants)


def _name(t):
    return "%s (%s)" % (_PY[t], t) if t in _PY else t


def _union(branches, root):
    names = []
    for b in branches:
        b = _deref(b, root) or {}
        t = b.get("type")
        names.append(_name(t) if isinstance(t, str) else "enum" if "enum" in b else "a schema")
    return " | ".join(names)


def _describe(value):
    text = repr(value)
    if len(text) > 40:
        text = text[:37] + "..."
    return "%s %s" % (type(value).__name__, text)
