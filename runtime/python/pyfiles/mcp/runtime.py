"""The codebridge helpers: discover MCP servers and tools, and call tools.

Every function here is also a global of the code run by run_python. Async
forms return coroutines (use them with await or asyncio.gather; the request is
sent as soon as the function is called, so several run concurrently); the
_sync forms block and work both inside and outside a running event loop.
Requests travel to codebridge over the sandbox's private protocol channel.

Runs on Python 3.9+.
"""

import json
import sys

# base64, difflib and inspect are imported where they are used: an idle
# session holds only what its code used (with the runner's and the other
# modules' imports made lazy alike, 1.9 of an idle session's 9.4 MB).

from . import memory as _memory
from . import results as _results
from ._channel import MCPError, _await, _call, _request
from .memory import *  # noqa: F401,F403
from .results import *  # noqa: F401,F403

__all__ = [
    "MCPError",
    "discovered_servers",
    "list_servers",
    "list_servers_sync",
    "list_loaded_server_metadata",
    "describe_server",
    "list_tools",
    "list_tools_sync",
    "query_tool_docs",
    "query_tool_docs_sync",
    "search_tool_docs",
    "search_tool_docs_sync",
    "call_tool",
    "call_tool_sync",
    "check_tools",
    "check_tools_sync",
    "list_resources",
    "list_resources_sync",
    "list_resource_templates",
    "list_resource_templates_sync",
    "read_resource",
    "read_resource_sync",
    "list_prompts",
    "list_prompts_sync",
    "get_prompt",
    "get_prompt_sync",
    "capability_summary",
]
# Memories, saved helpers, images and files live in modules of their own;
# they are part of this one's API too (from mcp import runtime).
__all__ += _memory.__all__ + _results.__all__

_servers = []  # [{"name", "alias", "description"}] from the start frame


def _server_info(name):
    for s in _servers:
        if name == s.get("name") or name == s.get("alias"):
            return s
    return None


# --- discovery -------------------------------------------------------------


def discovered_servers(detailed=False):
    """A tuple of the names of the MCP servers this run can use, or with
    detailed=True of dicts {name, alias, description}. Answered locally: no
    request, no server started."""
    if detailed:
        return tuple(
            {"name": s["name"], "alias": s["alias"], "description": s.get("description", "")}
            for s in _servers
        )
    return tuple(s["name"] for s in _servers)


async def list_servers():
    """A tuple of the names of the MCP servers this run can use."""
    return discovered_servers()


def list_servers_sync():
    """A tuple of the names of the MCP servers this run can use."""
    return discovered_servers()


def list_loaded_server_metadata():
    """A tuple of dicts {name, alias, description, tools} of the servers named
    in run_python's "servers" argument, started before the code ran."""
    return tuple(
        {k: v for k, v in s.items() if k != "loaded"} for s in _servers if s.get("loaded")
    )


def describe_server(name):
    """{name, alias, description, tools: [{name, alias, description}]} of one
    server (by name or alias), and when it is running how many resources,
    resourceTemplates and prompts it has. Blocks."""
    return _call("describe_server", {"server": name})


def list_tools(server):
    """Awaitable: the server's tools as [{name, alias, description, inputSchema, outputSchema?}]."""
    return _await(_request("list_tools", {"server": server}))


def list_tools_sync(server):
    """The server's tools as [{name, alias, description, inputSchema, outputSchema?}]."""
    return _call("list_tools", {"server": server})


def _docs_params(server, tool, detail):
    return {"server": server, "tool": tool, "detail": detail}


def _docs_result(tool):
    def convert(docs):
        if tool is None:
            return docs
        if not docs:
            raise MCPError("no documentation for tool %r" % (tool,), code="unknown_tool")
        return docs[0]

    return convert


def query_tool_docs(server, tool=None, detail="summary"):
    """Awaitable: documentation of one tool (a dict) or of all a server's tools
    (a list of dicts {server, serverAlias, tool, toolAlias, description,
    inputSchema?, outputSchema?, signature?}). detail: "summary" or "full"."""
    return _await(_request("query_tool_docs", _docs_params(server, tool, detail)), _docs_result(tool))


def query_tool_docs_sync(server, tool=None, detail="summary"):
    """Blocking form of query_tool_docs."""
    return _call("query_tool_docs", _docs_params(server, tool, detail), _docs_result(tool))


def _search_result(reply):
    # The host answers {"results": [...], "unavailable": [{server, error}]}:
    # servers that could not be started are named on stderr, not fatal.
    if not isinstance(reply, dict):
        return reply
    for u in reply.get("unavailable") or ():
        sys.stderr.write("search_tool_docs: server %r could not be searched: %s\n" % (u.get("server"), u.get("error")))
    return reply.get("results") or []


def search_tool_docs(query, limit=5, detail="summary"):
    """Awaitable: the tools of all servers best matching query, as
    query_tool_docs dicts with a score, best first. Servers that fail to start
    are named on stderr and skipped."""
    return _await(_request("search_tool_docs", {"query": query, "limit": limit, "detail": detail}), _search_result)


def search_tool_docs_sync(query, limit=5, detail="summary"):
    """Blocking form of search_tool_docs."""
    return _call("search_tool_docs", {"query": query, "limit": limit, "detail": detail}, _search_result)


# --- calling tools ---------------------------------------------------------


def _block(block):
    if isinstance(block, dict) and block.get("type") == "text":
        return block.get("text", "")
    return block


def convert_result(result):
    """Turns an MCP CallToolResult into a Python value (see call_tool)."""
    if not isinstance(result, dict):
        return result
    content = result.get("content") or []
    if result.get("isError"):
        text = "\n".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
        raise MCPError(text or "the tool reported an error", code="tool_error", data=result)
    if result.get("structuredContent") is not None:
        return result["structuredContent"]
    if not content:
        return None
    if len(content) == 1:
        block = content[0]
        if isinstance(block, dict) and block.get("type") == "text":
            text = block.get("text", "")
            try:
                return json.loads(text)
            except ValueError:
                return text
        return block
    return [_block(b) for b in content]


def _call_params(server, tool, arguments):
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise MCPError("arguments must be a dict, not %s" % type(arguments).__name__, code="bad_arguments")
    params = {"server": server, "tool": tool}
    doc = _full_doc(server, tool)
    if doc is _START_FAILED:
        params["start_failed"] = True
        _tool_docs.pop((server, tool), None)  # the next call tries again
    params["arguments"] = _check_arguments(server, tool, doc, arguments)
    return params


# --- resources and prompts ---------------------------------------------------


def list_resources(server):
    """Awaitable: the server's resources, [{uri, name, title?, description?,
    mimeType?, size?}]. MCPError "unsupported" if it offers none."""
    return _await(_request("list_resources", {"server": server}))


def list_resources_sync(server):
    """Blocking form of list_resources."""
    return _call("list_resources", {"server": server})


def list_resource_templates(server):
    """Awaitable: the server's resource templates, [{uriTemplate, name,
    title?, description?, mimeType?}]; fill one in and read_resource it."""
    return _await(_request("list_resource_templates", {"server": server}))


def list_resource_templates_sync(server):
    """Blocking form of list_resource_templates."""
    return _call("list_resource_templates", {"server": server})


def _uri(resource):
    """The URI of resource: a str, or a dict holding one (a list_resources
    entry, a tool result's resource_link block or embedded resource)."""
    if isinstance(resource, str):
        return resource
    if isinstance(resource, dict):
        for d in (resource, resource.get("resource")):
            if isinstance(d, dict) and isinstance(d.get("uri"), str):
                return d["uri"]
    raise MCPError("read_resource needs a URI, or a dict with a \"uri\" (a list_resources entry or a resource_link block), not %r"
                   % (resource,), code="bad_arguments")


def _contents(reply):
    """A ReadResourceResult as Python: each content as str (text) or bytes
    (a base64 blob, decoded); one content alone, several as a list."""
    if not isinstance(reply, dict):
        return reply
    import base64

    values = [base64.b64decode(c["blob"]) if "blob" in c else c.get("text", "")
              for c in reply.get("contents") or () if isinstance(c, dict)]
    return values[0] if len(values) == 1 else values


def read_resource(server, uri, raw=False):
    """Awaitable: the resource at uri (a str, or a dict with a "uri": a
    list_resources entry, a resource_link block from a tool's result).
    Text comes back as str, a blob as bytes; several contents as a list of
    them. raw=True returns the MCP result {contents: [{uri, mimeType?, text |
    blob}]} unchanged."""
    return _await(_request("read_resource", {"server": server, "uri": _uri(uri)}), None if raw else _contents)


def read_resource_sync(server, uri, raw=False):
    """Blocking form of read_resource."""
    return _call("read_resource", {"server": server, "uri": _uri(uri)}, None if raw else _contents)


def list_prompts(server):
    """Awaitable: the server's prompts, [{name, title?, description?,
    arguments?: [{name, description?, required?}]}]."""
    return _await(_request("list_prompts", {"server": server}))


def list_prompts_sync(server):
    """Blocking form of list_prompts."""
    return _call("list_prompts", {"server": server})


def _prompt_params(server, name, arguments):
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise MCPError("prompt arguments must be a dict, not %s" % type(arguments).__name__, code="bad_arguments")
    # MCP's prompt arguments are strings: other values are sent as JSON.
    try:
        args = {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in arguments.items()}
    except (TypeError, ValueError) as e:
        raise MCPError("prompt arguments are strings, or values sent as JSON: %s" % e, code="bad_arguments")
    return {"server": server, "name": name, "arguments": args}


def _prompt(reply):
    """A GetPromptResult with each message's text content as str."""
    if not isinstance(reply, dict):
        return reply
    messages = [{"role": m.get("role"), "content": _block(m.get("content"))}
                for m in reply.get("messages") or () if isinstance(m, dict)]
    return {"description": reply.get("description", ""), "messages": messages}


def get_prompt(server, name, arguments=None, raw=False):
    """Awaitable: the prompt filled in with arguments (a dict; values that
    are not str are sent as JSON), as {description, messages: [{role,
    content}]}, a text content as str and others as their dict. raw=True
    returns the MCP result unchanged."""
    return _await(_request("get_prompt", _prompt_params(server, name, arguments)), None if raw else _prompt)


def get_prompt_sync(server, name, arguments=None, raw=False):
    """Blocking form of get_prompt."""
    return _call("get_prompt", _prompt_params(server, name, arguments), None if raw else _prompt)


# --- typed tools -------------------------------------------------------------

_tool_docs = {}  # (server, tool) as called -> full doc, or None; emptied every run


class _StartFailed:
    """What _full_doc returns when the server failed to start for the docs:
    no docs, and the call that follows says so without starting it again."""

    def __bool__(self):
        return False


_START_FAILED = _StartFailed()


def _full_doc(server, tool):
    """The full documentation of a tool, asked for once per run (answered
    from the tool list codebridge saved when the server is not running);
    None when there is none, and the call itself then says why. A failed
    start is kept only until the call it was asked for has used it."""
    key = (server, tool)
    if key not in _tool_docs:
        try:
            doc = query_tool_docs_sync(server, tool, detail="full")
        except MCPError as e:
            doc = _START_FAILED if e.code == "server_failed" else None
        except Exception:  # the call reports what is wrong
            doc = None
        _tool_docs[key] = doc if isinstance(doc, dict) or doc is _START_FAILED else None
    return _tool_docs[key]


def _check_arguments(server, tool, doc, arguments):
    """Catches a call missing a required argument, or with one the tool does
    not take, before it is sent, with the tool's signature (from doc, its full
    docs) in the message. Arguments given by their Python name (class_ for
    class, max_results for max-results) are renamed to the tool's."""
    if not doc or "signature" not in doc:
        return arguments
    params = doc.get("params") or []
    names = {p["name"] for p in params}
    renamed = {p["alias"]: p["name"] for p in params if p["alias"] not in names}
    if renamed:
        arguments = {(renamed.get(k, k) if k not in names else k): v for k, v in arguments.items()}
    missing = [p["alias"] for p in params if p["required"] and p["name"] not in arguments]
    extra = (doc.get("inputSchema") or {}).get("additionalProperties")
    unknown = [] if extra not in (None, False) else [k for k in arguments if k not in names]
    if not missing and not unknown:
        return arguments
    problems = []
    if missing:
        problems.append("is missing the required argument%s %s" % ("s" if len(missing) > 1 else "", ", ".join(map(repr, missing))))
    import difflib

    for k in unknown:
        close = difflib.get_close_matches(k, [p["alias"] for p in params], n=1)
        problems.append("got an unexpected argument %r%s" % (k, " (did you mean %r?)" % close[0] if close else ""))
    raise MCPError(
        "%s.%s() %s; nothing was sent. Its signature:\n    %s"
        % (doc.get("server", server), doc.get("toolAlias") or tool, " and ".join(problems), doc.get("signature", "")),
        code="bad_arguments", data={"missing": missing, "unknown": unknown, "signature": doc.get("signature")})


class _Annotation:
    """A type as text, shown as is by inspect and help()."""

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text


class _Default(_Annotation):
    pass


def _typed(f, doc):
    """Gives f the tool's typed signature and docstring (the TypedDicts it
    names, its description, its parameters), from a full doc."""
    if not doc or "signature" not in doc:
        return f
    import inspect

    params = []
    for p in doc.get("params") or []:
        if p["required"]:
            default = inspect.Parameter.empty
        elif "default" in p:
            default = _Default(repr(p["default"]))
        else:
            default = None
        params.append(inspect.Parameter(p["alias"], inspect.Parameter.KEYWORD_ONLY, default=default,
                                        annotation=_Annotation(p["type"])))
    ret = doc.get("signature", "").rpartition(" -> ")[2] or "Any"
    try:
        f.__signature__ = inspect.Signature(params, return_annotation=_Annotation(ret))
    except ValueError:
        return f
    stub = doc.get("stub") or ""
    types, _, body = stub.rpartition("\ndef ")
    text = body.split('"""', 1)[1].rsplit('"""', 1)[0] if body.count('"""') >= 2 else (doc.get("description") or "")
    text = inspect.cleandoc(text).strip()
    if types.strip():
        text += "\n\nTypes:\n" + "\n".join("    " + line if line else line for line in types.strip().split("\n"))
    f.__doc__ = text
    return f


def call_tool(server, tool, arguments=None, raw=False):
    """Awaitable: calls a tool (server and tool by name or alias).

    Returns structuredContent if the tool gave it, else the JSON value of a
    single text block, else its text; a single image, audio or resource block
    as its dict; several blocks as a list. raw=True returns the MCP result
    dict unchanged. A tool error raises MCPError with code "tool_error".
    """
    return _await(_request("call_tool", _call_params(server, tool, arguments)), None if raw else convert_result)


def call_tool_sync(server, tool, arguments=None, raw=False):
    """Blocking form of call_tool."""
    return _call("call_tool", _call_params(server, tool, arguments), None if raw else convert_result)


def _tool_refs(tools):
    """check_tools' argument as [{server, tool?}]: each item "server.tool"
    (split after the longest server name or alias it starts with, else at
    the first dot), a bare server name, a (server, tool) pair or a dict."""
    if isinstance(tools, (str, tuple, dict)):
        tools = [tools]
    refs = []
    for item in tools:
        if isinstance(item, dict):
            refs.append({"server": str(item.get("server", "")), "tool": str(item.get("tool") or "")})
        elif isinstance(item, (tuple, list)) and len(item) == 2:
            refs.append({"server": str(item[0]), "tool": str(item[1])})
        elif isinstance(item, str):
            names = sorted({n for s in _servers for n in (s.get("name"), s.get("alias")) if n}, key=len, reverse=True)
            server = next((n for n in names if item == n or item.startswith(n + ".")), None)
            if server is None:
                server = item.split(".", 1)[0]
            refs.append({"server": server, "tool": item[len(server) + 1:]})
        else:
            raise MCPError(
                'check_tools takes "server.tool" strings, (server, tool) pairs or {"server", "tool"} dicts, not %r' % (item,),
                code="bad_arguments",
            )
    return {"tools": refs}


def check_tools(tools):
    """Awaitable: whether each tool could be called now, without calling it:
    [{server, tool, status, message?}] in the order given, status "ready" or
    why not: not_configured, not_found, quarantined, denied, sign_in_required,
    starting, failed. tools: "server.tool" strings (a bare "server" checks the
    server), (server, tool) pairs or {"server", "tool"} dicts. Servers not
    running are started, as a call would."""
    return _await(_request("check_tools", _tool_refs(tools)))


def check_tools_sync(tools):
    """Blocking form of check_tools."""
    return _call("check_tools", _tool_refs(tools))


_tool_methods = {}  # (call, server, tool) -> typed function, when it had full docs; emptied every run


def _tool_method(call, server, tool):
    """The function a proxy attribute stands for: call(server, tool, kwargs),
    typed from the tool's docs, so help() shows its signature. Made once per
    run: code that calls mcp_x.tool in a loop does not type it again."""
    if tool.startswith("_"):
        raise AttributeError(tool)
    key = (call, server, tool)
    method = _tool_methods.get(key)
    if method is not None:
        return method

    def method(**arguments):
        return call(server, tool, arguments)

    method.__name__ = method.__qualname__ = tool
    doc = _full_doc(server, tool)
    if isinstance(doc, dict):  # not a failed start's, which the next call asks again
        _tool_methods[key] = method
    return _typed(method, doc)


class _SyncTools:
    """mcp_<alias>.sync.<tool>(**args): blocking tool calls."""

    def __init__(self, server):
        self._server = server

    def __getattr__(self, tool):
        return _tool_method(call_tool_sync, self._server, tool)

    def __dir__(self):
        return _tool_aliases(self._server)


def _tool_aliases(server):
    try:
        return sorted(t.get("alias") or t["name"] for t in list_tools_sync(server))
    except Exception:
        return []


class ServerProxy:
    """One MCP server: await proxy.<tool>(**args), proxy.sync.<tool>(**args),
    await proxy.call("tool", **args), proxy.call_sync("tool", **args); its
    resources and prompts with the methods below (each with a _sync twin).

    A tool whose name is one of this class's attributes (name, alias,
    description, sync, call, call_sync, list_tools, list_resources,
    list_resource_templates, read_resource, list_prompts, get_prompt and
    their _sync forms) is reached with call("tool", ...) or
    sync.<tool>(...): the helpers win on the proxy itself."""

    def __init__(self, name, alias, description=""):
        self.name = name
        self.alias = alias
        self.description = description
        self.sync = _SyncTools(name)

    def call(self, tool, **arguments):
        """Awaitable: calls tool with the keyword arguments."""
        return call_tool(self.name, tool, arguments)

    def call_sync(self, tool, **arguments):
        """Calls tool with the keyword arguments and blocks for the result."""
        return call_tool_sync(self.name, tool, arguments)

    def list_tools(self):
        """Awaitable: this server's tools."""
        return list_tools(self.name)

    def list_tools_sync(self):
        """This server's tools."""
        return list_tools_sync(self.name)

    def list_resources(self):
        """Awaitable: this server's resources (see list_resources)."""
        return list_resources(self.name)

    def list_resources_sync(self):
        """This server's resources."""
        return list_resources_sync(self.name)

    def list_resource_templates(self):
        """Awaitable: this server's resource templates."""
        return list_resource_templates(self.name)

    def list_resource_templates_sync(self):
        """This server's resource templates."""
        return list_resource_templates_sync(self.name)

    def read_resource(self, uri, raw=False):
        """Awaitable: the resource at uri, str or bytes (see read_resource)."""
        return read_resource(self.name, uri, raw)

    def read_resource_sync(self, uri, raw=False):
        """The resource at uri, str or bytes."""
        return read_resource_sync(self.name, uri, raw)

    def list_prompts(self):
        """Awaitable: this server's prompts."""
        return list_prompts(self.name)

    def list_prompts_sync(self):
        """This server's prompts."""
        return list_prompts_sync(self.name)

    def get_prompt(self, name, arguments=None, raw=False):
        """Awaitable: prompt name filled in with arguments (see get_prompt)."""
        return get_prompt(self.name, name, arguments, raw)

    def get_prompt_sync(self, name, arguments=None, raw=False):
        """Prompt name filled in with arguments."""
        return get_prompt_sync(self.name, name, arguments, raw)

    def __getattr__(self, tool):
        return _tool_method(call_tool, self.name, tool)

    def __dir__(self):
        return sorted(set(object.__dir__(self)) | set(_tool_aliases(self.name)))

    def __repr__(self):
        return "<MCP server %r: await mcp_%s.<tool>(**args)>" % (self.name, self.alias)


def tool_function(server, tool):
    """An async function calling one tool, with a .sync blocking twin.

    tool is a list_tools entry {name, alias, description, inputSchema}."""
    name = tool["name"]
    alias = tool.get("alias") or name

    async def call(**arguments):
        return await call_tool(server, name, arguments)

    def call_sync(**arguments):
        return call_tool_sync(server, name, arguments)

    for f in (call, call_sync):
        f.__name__ = f.__qualname__ = alias
        f.__doc__ = tool.get("description") or ""
        _typed(f, tool)
    call.sync = call_sync
    call.tool = tool
    return call


def capability_summary():
    """A short manual of these helpers."""
    return _SUMMARY


_SUMMARY = """\
codebridge helpers: globals of your code; also `import mcp`, `from mcp import runtime`.
Your calls share one Python session: variables, imports and /tmp files persist between
run_python calls (reset=true starts fresh; a [session] line says when state was lost).
Discover (nothing is loaded until you ask):
  discovered_servers(detailed=False)       tuple of server names, or of dicts {name, alias, description}
  list_servers() / list_servers_sync()     server names (await the first)
  list_loaded_server_metadata()            servers named in run_python's "servers", with their tools
  describe_server(name)                    {name, alias, description, tools: [{name, alias, description}],
                                           resources?, resourceTemplates?, prompts?} (counts, once it runs)
  list_tools(server) / list_tools_sync(server)   [{name, alias, description, inputSchema}]
  query_tool_docs(server, tool=None, detail="summary") / query_tool_docs_sync(...)   detail "summary" or "full"
                                           (full: typed signature, params, stub; help(mcp_x.tool) shows it too)
  search_tool_docs(query, limit=5, detail="summary") / search_tool_docs_sync(...)   best matches first
Call (servers and tools by name or alias):
  call_tool(server, tool, arguments=None, raw=False) / call_tool_sync(...)
  await mcp_<alias>.<tool>(**args)         blocking: mcp_<alias>.sync.<tool>(**args)
  await mcp_servers["name"].call("tool", **args)   blocking: .call_sync("tool", **args)
  from mcp.servers.<alias> import *        an async function per tool (blocking: f.sync(...)), and TOOLS
  check_tools(["server.tool", ...]) / check_tools_sync(...)   [{server, tool, status, message?}]: "ready",
                                           or not_found, quarantined, denied, sign_in_required, starting, ...
  capability_summary()                     this text
Resources and prompts (await the first form, or use the _sync one; "unsupported" if the server has none):
  list_resources(server) / list_resources_sync(server)     [{uri, name, mimeType?, description?, size?}]
  read_resource(server, uri, raw=False) / read_resource_sync(...)   text as str, a blob as bytes, several
                                           contents as a list; uri may be a list_resources entry or a
                                           resource_link block from a tool's result
  list_resource_templates(server) / list_resource_templates_sync(server)   [{uriTemplate, name, ...}]
  list_prompts(server) / list_prompts_sync(server)         [{name, description?, arguments?}]
  get_prompt(server, name, arguments=None, raw=False) / get_prompt_sync(...)   {description, messages:
                                           [{role, content}]}, text content as str
  await mcp_<alias>.read_resource(uri), .list_prompts(), .get_prompt(name, args), ...: the same, one server
                                           (a tool of the same name: mcp_<alias>.call("name", **args))
Remember across sessions and restarts (stored by codebridge; JSON values, 1 MiB each; these block):
  save_memory(key, value, metadata=None), load_memory(key, default=None), update_memory(key, updater),
  delete_memory(key), list_memories(), memory_exists(key), get_memory_info(key)
  save_tool(func, name=None, description=None)   every new session defines func; search_tool_docs finds it
  list_saved_tools(), delete_saved_tool(name)
Return images and files with the result, after the text (matplotlib figures come back by themselves
on plt.show() and when the run ends; 2 MiB each, 10 per run by default; over that: a note, or MCPError too_large):
  show_image(obj, mime_type=None, name=None)    a figure, PIL image, PNG/JPEG/GIF/WebP bytes or a path
  return_file(path, mime_type=None, name=None)  an embedded resource: text for text types, else base64
A call returns structuredContent, else a single text block parsed as JSON, else its text; other blocks as
dicts, several blocks as a list; raw=True gives the MCP result. Await forms run concurrently under
asyncio.gather; _sync forms block, inside or outside a running loop. Failures raise MCPError
(.code: unknown_server, unknown_tool, policy_denied, declined, bad_arguments, too_large, server_failed, timeout,
tool_error, unsupported (no resources/prompts), internal;
.message; .data with details such as suggestions).
"""

