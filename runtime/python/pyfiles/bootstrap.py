# codebridge bootstrap: run by `python3 -I -u -c` in the sandbox. Finds its
# protocol stream, waits for the 'S' frame on it and runs the embedded runner
# from memory, which then serves runs until the stream ends. The stream is the
# unix socket named by CODEBRIDGE_CHANNEL when that is set and connects (the
# host accepts one connection); otherwise it writes b"\x06" and a line saying
# why on fd 1, and the stream is fds 0 and 1. With CODEBRIDGE_SERVE set instead
# (a Kubernetes pod), it serves the stream on the abstract unix socket of that
# name, one connection at a time, through codebridge_serve. Exits quietly when
# the stream ends first (a pre-started container may be discarded unused) or, if
# CODEBRIDGE_WAIT_LIMIT is set, when no frame arrives within that many seconds.
import os, sys, select
_in, _out = 0, 1
_channel = os.environ.get("CODEBRIDGE_CHANNEL")
_serve = os.environ.get("CODEBRIDGE_SERVE")
_limit = float(os.environ.get("CODEBRIDGE_WAIT_LIMIT") or 0)
if _serve:
    import socket
    _listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    _listener.bind("\0" + _serve)
    _listener.listen(8)
    if _limit > 0 and not select.select([_listener], [], [], _limit)[0]:
        os._exit(0)
    _conn = _listener.accept()[0]
    _conn.sendall(b"N")  # fresh: waiting for the start frame
    _in = _out = _conn.fileno()
elif _channel:
    import _socket  # socket's C part: socket.py's enums cost an idle session 0.15 MB
    _sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        _sock.connect(_channel)
        _in = _out = _sock.detach()
    except OSError as e:
        _sock.close()
        _why = ("cannot connect to %s: %s" % (_channel, e)).encode("utf-8", "replace")
        os.write(1, b"\x06" + _why[:1000].replace(b"\n", b" ") + b"\n")
# What the runner needs, imported while the container waits for work: after
# connecting, so the host removes the socket's folder as early as it can.
# Not asyncio: the first run that awaits imports it (a quarter of an idle
# session's memory); nor inspect, ast, queue, traceback or socket's Python
# part, which code imports when it uses them.
import _ast, _queue, array, collections, fcntl, functools, importlib.util, json, linecache, select, selectors, signal, struct, threading, types
def _ended(fd):
    # The host ended the stream. A host that ends this one sandbox shuts its
    # side down and waits: exit now. A host that closed it (every sandbox of a
    # codebridge shutting down, or killed) gets its sandboxes' exits spread
    # over time, this one after CODEBRIDGE_EXIT_DELAY seconds: each exit
    # costs the engine a process (Podman's cleanup), and hundreds at once
    # overwhelm a machine. Over stdin (no socket) it cannot tell: exit now.
    if _in != 0:
        p = select.poll()
        p.register(fd, select.POLLIN)
        if any(ev & select.POLLHUP for _, ev in p.poll(0)):
            select.select([], [], [], float(os.environ.get("CODEBRIDGE_EXIT_DELAY") or 0))
    os._exit(0)
def _read(n):
    chunks = []
    while n:
        b = os.read(_in, min(n, 1 << 20))
        if not b:
            _ended(_in)
        chunks.append(b)
        n -= len(b)
    return b"".join(chunks)
if _limit > 0:
    if not select.select([_in], [], [], _limit)[0]:
        os._exit(0)
_head = _read(5)
if _head[:1] != b"S":
    sys.stderr.write("codebridge bootstrap: expected start frame, got %r\n" % _head[:1])
    os._exit(2)
_start = json.loads(_read(int.from_bytes(_head[1:], "big")))
class _Embedded:
    """Imports the modules sent in the start frame, from memory."""
    def __init__(self, files):
        self.files = files
    def _path(self, name):
        base = name.replace(".", "/")
        for path, pkg in ((base + "/__init__.py", True), (base + ".py", False)):
            if path in self.files:
                return path, pkg
        return None, False
    def find_spec(self, name, path=None, target=None):
        p, pkg = self._path(name)
        if p is None:
            return None
        return importlib.util.spec_from_loader(name, self, origin="<codebridge>/" + p, is_package=pkg)
    def create_module(self, spec):
        return None
    def exec_module(self, module):
        p, _ = self._path(module.__name__)
        module.__file__ = "<codebridge>/" + p
        exec(compile(self.files[p], module.__file__, "exec", dont_inherit=True), module.__dict__)
    def get_source(self, name):
        return self.files.get(self._path(name)[0])
sys.meta_path.insert(0, _Embedded(_start.pop("files")))
if _serve:
    import codebridge_serve
    _in = _out = codebridge_serve.serve(_listener, _conn)
import codebridge_runner
codebridge_runner.main(_start, _in, _out, _ended)
