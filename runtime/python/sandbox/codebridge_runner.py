"""codebridge sandbox runner: a session's interpreter, speaking the frame protocol.

Frames are `kind (1 byte) | length (4 bytes, big-endian) | payload`. The runner
moves the protocol onto private file descriptors before any user code runs, so
fd 0 is /dev/null and fds 1 and 2 are pipes whose contents are forwarded as 'O'
and 'E' frames: whatever the code, a subprocess or a C extension writes can never
corrupt the framing. Each 'C' frame is one run in the session's namespace; it
ends with an 'X' frame. Requests to the host are 'Q' frames, answered by 'R'
frames. An 'I' frame interrupts the run in progress (KeyboardInterrupt).

Runs on Python 3.9+.
"""

import array
import ast
import asyncio
import builtins
import concurrent.futures
import fcntl
import errno
import importlib
import inspect
import json
import linecache
import os
import queue
import select
import signal
import sys
import threading
import time
import traceback
import types

try:
    from termios import FIONREAD
except ImportError:  # pragma: no cover - Linux's value
    FIONREAD = 0x541B

FILE_PREFIX = "<run_python"  # each run's code is compiled as "<run_python #N>"
CHUNK = 64 << 10  # largest 'O'/'E' payload
TEXT_LIMIT = 64 << 10  # characters kept of a failure's message and traceback
DRAIN_LIMIT = 10.0  # seconds a pipe's pump may go without sending before a run's end stops waiting for it

# The run in progress: its number while user code runs, else 0. SIGINT raises
# KeyboardInterrupt only while it is set. _interrupted is the latest run the
# host asked to interrupt, so an interrupt that arrives before its run's code
# has started is not lost.
STREAM = "stdio"  # or "socket": what the protocol travels over (codebridge doctor reports it)
_running = 0
_interrupted = 0


class Channel:
    """The protocol over two private fds: one writer lock, one reader thread."""

    def __init__(self, fd_in, fd_out):
        self._in = fd_in
        self._out = fd_out
        self._wlock = threading.Lock()
        self._plock = threading.Lock()
        self._pending = {}  # request id -> Future; guarded by _plock
        self._next_id = 0
        self._eof = None  # reason the reader stopped, once it has
        self.runs = queue.Queue()  # 'C' payloads, then None when the host is gone
        self.max_request = 0  # largest request frame the host reads; 0 means no check
        self.max_attachment = 0  # largest image or file the host takes with a run's result
        self._reader = threading.Thread(target=self._read_loop, name="codebridge-reader", daemon=True)

    def start(self):
        self._reader.start()

    def send(self, kind, payload):
        """Writes one frame; raises OSError when the host is gone."""
        head = kind + len(payload).to_bytes(4, "big")
        with self._wlock:
            if len(payload) <= CHUNK:
                self._write_all(head + payload)  # one write: fewer syscalls for output
            else:
                self._write_all(head)
                self._write_all(payload)

    def _write_all(self, data):
        view = memoryview(data)
        while view:
            n = os.write(self._out, view)
            view = view[n:]

    def request(self, method, params):
        """Sends a 'Q' frame and returns a concurrent.futures.Future for the result.

        The future fails with mcp.MCPError(message, code, data) when the host
        answers with an error or the channel is gone.
        """
        fut = concurrent.futures.Future()
        with self._plock:
            if self._eof is not None:
                fut.set_exception(_make_error("internal", self._eof, None))
                return fut
            self._next_id += 1
            rid = self._next_id
            self._pending[rid] = fut
        try:
            payload = json.dumps({"id": rid, "method": method, "params": params},
                                 ensure_ascii=False, allow_nan=False).encode("utf-8", "surrogatepass")
        except (TypeError, ValueError) as e:
            with self._plock:
                self._pending.pop(rid, None)
            fut.set_exception(_make_error("bad_arguments", "arguments are not JSON-serializable: %s" % e, None))
            return fut
        if self.max_request and len(payload) > self.max_request:
            with self._plock:
                self._pending.pop(rid, None)
            fut.set_exception(_make_error("bad_arguments", (
                "this %s request is %d bytes, over the %d bytes codebridge accepts (MCP_BRIDGE_MAX_ARGUMENT_SIZE): "
                "pass the data another way, e.g. a file path or URL the tool can read, or split it over several calls")
                % (method, len(payload), self.max_request), None))
            return fut
        try:
            self.send(b"Q", payload)
        except BaseException as e:  # never leave a future unresolved
            with self._plock:
                self._pending.pop(rid, None)
            if not fut.done():
                fut.set_exception(_make_error("internal", "sending request: %s" % _str(e), None))
            if not isinstance(e, Exception):
                raise
        return fut

    def _read_exact(self, n):
        chunks = []
        while n:
            b = os.read(self._in, min(n, 1 << 20))
            if not b:
                return None
            chunks.append(b)
            n -= len(b)
        return b"".join(chunks)

    def _read_loop(self):
        reason = "the host closed the connection"
        eof = True
        try:
            while True:
                head = self._read_exact(5)
                if head is None:
                    break
                body = self._read_exact(int.from_bytes(head[1:], "big"))
                if body is None:
                    break
                kind = head[:1]
                if kind == b"R":
                    self._dispatch(json.loads(body))
                elif kind == b"C":
                    self.runs.put(json.loads(body))
                elif kind == b"I":
                    _interrupt(json.loads(body).get("run"))
        except Exception as e:  # a broken reply stream fails every pending request
            reason = "reading replies: %s" % e
            eof = False
        with self._plock:
            self._eof = reason
            pending, self._pending = self._pending, {}
        for fut in pending.values():
            if not fut.done():
                fut.set_exception(_make_error("internal", reason, None))
        self.runs.put(None)
        if eof:
            # The host is gone (closed the stream, or died): no one reads
            # what a run in progress would report, so end now rather than
            # after it. The container ends with this process, and the
            # engine removes it.
            os._exit(0)

    def _dispatch(self, reply):
        with self._plock:
            fut = self._pending.pop(reply.get("id"), None)
        if fut is None or fut.done():
            return
        err = reply.get("error")
        if err is not None:
            fut.set_exception(_make_error(err.get("code") or "internal", err.get("message") or "", err.get("data")))
        else:
            fut.set_result(reply.get("result"))


def _make_error(code, message, data):
    mcp = sys.modules.get("mcp")
    cls = getattr(mcp, "MCPError", None) if mcp is not None else None
    if cls is None:
        return RuntimeError("%s: %s" % (code, message))
    return cls(message, code=code, data=data)


def _interrupt(run):
    """Raises KeyboardInterrupt in the main thread if run is still running,
    or makes it raise as it starts."""
    global _interrupted
    _interrupted = max(_interrupted, run or 0)
    if run and run == _running:
        try:
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
        except Exception:
            pass


def _on_sigint(signum, frame):
    if _running:
        raise KeyboardInterrupt


class Pump:
    """Forwards one pipe to frames of one kind, in chunks of at most CHUNK bytes."""

    def __init__(self, channel, kind, fd):
        self._ch = channel
        self._kind = kind
        self._fd = fd
        # _taken counts the bytes read from the pipe, _sent those sent on:
        # [drain] waits for _sent to reach what had been written when it began.
        self._cond = threading.Condition()
        self._taken = 0
        self._sent = 0
        self._thread = threading.Thread(target=self._loop, name="codebridge-pump", daemon=True)

    def start(self):
        self._thread.start()

    def _loop(self):
        try:
            while True:
                select.select([self._fd], [], [])
                with self._cond:
                    data = os.read(self._fd, CHUNK)
                    self._taken += len(data)
                if not data:
                    return
                self._ch.send(self._kind, data)
                with self._cond:
                    self._sent += len(data)
                    self._cond.notify_all()
        except OSError:
            return
        finally:
            with self._cond:
                self._cond.notify_all()

    def drain(self, deadline):
        """Waits until everything written to the pipe before the call has been
        sent on, however long a loaded machine takes to schedule the pump, or
        until the pump has made no progress by deadline (the host stopped
        reading). What a background writer adds meanwhile is not waited for:
        it goes out with a later run."""
        n = array.array("i", [0])
        with self._cond:
            try:
                fcntl.ioctl(self._fd, FIONREAD, n)
            except OSError:
                return
            target = self._taken + n[0]
            while self._sent < target and self._thread.is_alive():
                sent = self._sent
                self._cond.wait(max(deadline - time.monotonic(), 0))
                if self._sent == sent and time.monotonic() >= deadline:
                    return
                if self._sent > sent:
                    deadline = time.monotonic() + DRAIN_LIMIT


def _redirect_stdio(channel):
    """Points fd 0 at /dev/null and fds 1, 2 at pumped pipes."""
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    pumps = []
    for fd, kind in ((1, b"O"), (2, b"E")):
        r, w = os.pipe()
        os.dup2(w, fd)  # inheritable, so subprocesses write to the pipe too
        os.close(w)
        p = Pump(channel, kind, r)
        p.start()
        pumps.append(p)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(encoding="utf-8", errors="backslashreplace", line_buffering=True)
        except Exception:
            pass
    return pumps


def _flush_all():
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except Exception:
            pass
    if "ctypes" in sys.modules:  # C stdio buffers of extensions (e.g. printf)
        try:
            import ctypes
            ctypes.CDLL(None).fflush(None)
        except Exception:
            pass


def _user_stack(stack):
    """Frames from the first frame of the user's code on, without our own."""
    frames = list(stack)
    for i, f in enumerate(frames):
        if f.filename.startswith(FILE_PREFIX):
            frames = frames[i:]
            break
    else:
        frames = [f for f in frames if not f.filename.startswith("<codebridge>")]
        return traceback.StackSummary.from_list(frames)
    return traceback.StackSummary.from_list([f for f in frames if not f.filename.startswith("<codebridge>")])


def format_exception(exc):
    te = traceback.TracebackException(type(exc), exc, exc.__traceback__, capture_locals=False)
    seen = set()
    todo = [te]
    while todo:
        t = todo.pop()
        if id(t) in seen:
            continue
        seen.add(id(t))
        t.stack = _user_stack(t.stack)
        for nxt in (t.__cause__, t.__context__):
            if nxt is not None:
                todo.append(nxt)
        todo.extend(getattr(t, "exceptions", None) or ())  # ExceptionGroup, 3.11+
    return "".join(te.format())


def _clip(text, keep_tail=False):
    """Bounds a failure's text; tracebacks keep their end, messages their start."""
    if len(text) <= TEXT_LIMIT:
        return text
    cut = len(text) - TEXT_LIMIT
    if keep_tail:
        return "[%d characters cut]\n" % cut + text[-TEXT_LIMIT:]
    return text[:TEXT_LIMIT] + "\n[%d characters cut]" % cut


def _str(exc):
    try:
        return str(exc)
    except Exception:
        return "<%s: str() failed>" % type(exc).__name__


# Set by codebridge when the sandbox runs under gVisor (MCP_BRIDGE_RUNTIME=runsc).
GVISOR = os.environ.get("CODEBRIDGE_GVISOR") == "1"
GVISOR_NOTE = ("codebridge: this sandbox runs under gVisor (MCP_BRIDGE_RUNTIME=runsc), whose kernel does not "
               "implement every Linux system call: the call above is one it lacks (ENOSYS, 'Function not implemented'). "
               "Do it another way, or ask for codebridge to run without MCP_BRIDGE_RUNTIME if this code must run as is.")


def _enosys(exc):
    """Whether exc, or an exception it was raised from or during, is ENOSYS."""
    seen = set()
    todo = [exc]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, OSError) and e.errno == errno.ENOSYS:
            return True
        todo += [e.__cause__, e.__context__, *(getattr(e, "exceptions", None) or ())]
    return False


def _failure(kind, exc):
    try:
        tb = _clip(format_exception(exc), keep_tail=True)
    except Exception as e:  # never lose the exit frame to a broken exception
        tb = "(traceback unavailable: %s)" % _str(e)
    message = _clip(_str(exc))
    try:
        if GVISOR and _enosys(exc):
            message += "\n" + GVISOR_NOTE
            tb += GVISOR_NOTE + "\n"
    except Exception:
        pass
    return {"kind": kind, "type": type(exc).__name__, "message": message, "traceback": tb}


def _compile(src, filename, mode="exec"):
    """Compiles src under filename and keeps its lines, so tracebacks and
    inspect.getsource work on what it defines for the session's lifetime."""
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    return compile(src, filename, mode, flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)


def _run_code(code, namespace):
    if code.co_flags & inspect.CO_COROUTINE:
        loop = asyncio.new_event_loop()
        try:
            asyncio.set_event_loop(loop)
            loop.run_until_complete(types.FunctionType(code, namespace)())
        finally:
            try:
                loop.run_until_complete(loop.shutdown_asyncgens())
            except BaseException:
                pass
            asyncio.set_event_loop(None)
            loop.close()
    else:
        exec(code, namespace)


def _exit_status(exc):
    """Maps SystemExit to (exit code, failure or None)."""
    code = exc.code
    if code is None:
        return 0, None
    message = ""
    if isinstance(code, bool):
        code = int(code)
    elif not isinstance(code, int):
        message = _str(exc)  # CPython prints it to stderr and exits with 1
        try:
            sys.stderr.write(message + "\n")
        except Exception:
            pass
        code = 1
    if code == 0:
        return 0, None
    text = "exit status %d" % code
    if message:
        text += ": " + _clip(message)
    return code, {"kind": "exit", "type": "SystemExit", "message": text}


def _namespace(channel):
    main = types.ModuleType("__main__")
    main.__dict__["__builtins__"] = builtins
    sys.modules["__main__"] = main
    try:
        import mcp
    except ImportError:
        return main.__dict__, None
    mcp._install(channel, [])
    main.__dict__.update(mcp._globals())
    # plt.show() and figures left open return PNGs with the result; read
    # when matplotlib is first imported, which the runner never does itself.
    os.environ["MPLBACKEND"] = "module://mcp._mpl_backend"
    return main.__dict__, mcp


def _preload(modules):
    """Imports modules in a background thread while the interpreter waits for
    its first run; code importing one meanwhile waits for that import only.
    One that is not installed is skipped."""
    if not modules:
        return

    def load():
        for name in modules:
            try:
                importlib.import_module(name)
            except Exception:
                pass

    threading.Thread(target=load, name="codebridge-preload", daemon=True).start()


def _prelude(sources, namespace):
    """Defines the saved helpers in the session's namespace; a broken one is
    reported on stderr of the first run and skipped."""
    for s in sources or ():
        name = s.get("name") or "?"
        try:
            exec(_compile(s.get("source") or "", "<saved tool %s>" % name), namespace)
        except BaseException as e:
            sys.stderr.write("codebridge: saved helper %r could not be defined: %s: %s\n" % (name, type(e).__name__, _str(e)))


def _send_figures(mcp):
    """Returns the figures the run left open with its result."""
    try:
        mcp.runtime._results._send_open_figures()
    except BaseException as e:
        sys.stderr.write("codebridge: returning the open matplotlib figures failed: %s: %s\n" % (type(e).__name__, _str(e)))


def _run(msg, namespace, mcp, pumps, channel):
    """One run: its code in the session's namespace, then its exit frame."""
    global _running
    n = msg.get("run") or 0
    if msg.get("prelude"):
        _prelude(msg["prelude"], namespace)
    if mcp is not None:
        mcp._refresh(msg.get("servers") or [], namespace)
    exit_code, failure = 0, None
    try:
        try:
            code = _compile(msg.get("code") or "", "%s #%d>" % (FILE_PREFIX, n))
            _running = n  # set before checking _interrupted: see _interrupt
            try:
                if _interrupted >= n:
                    raise KeyboardInterrupt
                _run_code(code, namespace)
            finally:
                _running = 0
        except SystemExit as e:
            exit_code, failure = _exit_status(e)
        except MemoryError as e:
            exit_code, failure = 1, _failure("out_of_memory", e)
        except BaseException as e:
            exit_code, failure = 1, _failure("exception", e)
    except KeyboardInterrupt as e:  # an interrupt that landed in our own lines
        exit_code, failure = 1, _failure("exception", e)
    if mcp is not None:
        _send_figures(mcp)
    _flush_all()
    deadline = time.monotonic() + DRAIN_LIMIT
    for p in pumps:
        p.drain(deadline)
    exit_frame = {"run": n, "exit_code": exit_code, "error": failure}
    channel.send(b"X", json.dumps(exit_frame, ensure_ascii=False).encode("utf-8", "backslashreplace"))


def main(start, fd_in=0, fd_out=1):
    global STREAM
    if fd_in not in (0, 1, 2):
        STREAM = "socket"
    proto_in = os.dup(fd_in)  # os.dup makes non-inheritable descriptors
    proto_out = os.dup(fd_out)
    for fd in {fd_in, fd_out} - {0, 1, 2}:
        os.close(fd)  # a socket the bootstrap connected: now only the dups
    channel = Channel(proto_in, proto_out)
    channel.max_request = int(start.get("max_request") or 0)
    channel.max_attachment = int(start.get("max_attachment") or 0)
    pumps = _redirect_stdio(channel)
    signal.signal(signal.SIGINT, _on_sigint)
    channel.start()
    sys.argv = [""]
    namespace, mcp = _namespace(channel)
    _preload(start.get("preload"))
    # Like the bootstrap, give up when nothing comes for the wait limit: a
    # codebridge killed hard leaves no interpreter waiting for ever.
    wait = float(os.environ.get("CODEBRIDGE_WAIT_LIMIT") or 0) or None
    while True:
        try:
            msg = channel.runs.get(timeout=wait)
        except KeyboardInterrupt:  # a late interrupt between runs
            continue
        except queue.Empty:
            break
        if msg is None:
            break
        try:
            _run(msg, namespace, mcp, pumps, channel)
        except KeyboardInterrupt:
            continue
        except OSError:
            break  # the host is gone
    _flush_all()
    os._exit(0)
