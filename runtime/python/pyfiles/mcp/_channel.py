"""The channel to codebridge that every helper sends its requests on, and
the error a failed request raises.

Runs on Python 3.9+.
"""

channel = None  # the runner's Channel, set by mcp._install


class MCPError(Exception):
    """A failed request or tool call.

    code is one of unknown_server, unknown_tool, policy_denied, declined (the
    call needed the person's approval and did not get it), bad_arguments,
    server_failed, timeout, internal, too_large, conflict, too_many_requests,
    too_many_calls (the run made the most tool calls a run may make), busy
    (the server has as many calls in flight and waiting as it takes),
    quarantined, unsupported (the server offers no resources or prompts),
    auth_required (the server needs a sign-in: the message names the command,
    codebridge login NAME, for the user to run)
    (from codebridge) or tool_error (the tool reported an error); message is codebridge's or the tool's text;
    data holds details such as suggestions for a misspelt name, or the tool's
    raw result.
    """

    __module__ = "mcp.runtime"  # where code imports it from, as tracebacks name it

    def __init__(self, message, code="internal", data=None):
        super().__init__(message)
        self.message = message
        self.code = code
        self.data = data

    def __str__(self):
        return self.message

    def __repr__(self):
        return "MCPError(code=%r, message=%r)" % (self.code, self.message)


def _request(method, params):
    """Sends a request; returns its call, for _await."""
    if channel is None:
        raise MCPError("not connected to codebridge (only available inside run_python)", code="internal")
    return channel.request(method, params)


def _call(method, params, convert=None):
    """Sends a request and blocks for its result."""
    if channel is None:
        raise MCPError("not connected to codebridge (only available inside run_python)", code="internal")
    result = channel.call(method, params)
    return convert(result) if convert is not None else result


async def _await(call, convert=None):
    result = await channel.wait_async(call)
    return convert(result) if convert is not None else result
