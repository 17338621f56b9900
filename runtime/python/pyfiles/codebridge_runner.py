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

import _ast
import _queue
import array
import builtins
import collections
import errno
import fcntl
import functools
import importlib
import json
import linecache
import os
import select
import selectors
import signal
import struct
import sys
import threading
import time
import types

try:
    from termios import FIONREAD
except ImportError:  # pragma: no cover - Linux's value
    FIONREAD = 0x541B

FILE_PREFIX = "<run_python"  # each run's code is compiled as "<run_python #N>"
CHUNK = 64 << 10  # largest 'O'/'E' payload
TEXT_LIMIT = 64 << 10  # characters kept of a failure's message and traceback
DRAIN_LIMIT = 10.0  # seconds a pipe's pump may go without sending before a run's end stops waiting for it
# A code object's flag for code that awaits at its top level: inspect's
# CO_COROUTINE, stable since Python 3.5. Not imported from inspect, nor ast,
# queue or traceback (their C parts are imported instead, traceback on a
# run's first failure): an idle session holds only what it used, and these
# four cost a megabyte.
CO_COROUTINE = 0x80

# The run in progress: its number while user code runs, else 0. SIGINT raises
# KeyboardInterrupt only while it is set. _interrupted is the latest run the
# host asked to interrupt, so an interrupt that arrives before its run's code
# has started is not lost.
STREAM = "stdio"  # or "socket": what the protocol travels over (codebridge doctor reports it)
_running = 0
_interrupted = 0
_MAIN = threading.main_thread().ident
_critical = 0  # > 0 while the main thread reads the channel (see _enter_critical)
_deferred = False  # an interrupt came while _critical


class _Waiter:
    """A thread's place in the channel's queue of waiting threads: it blocks
    on its lock until a reply or run frame it waits for has come, or until
    the reader's role is handed to it."""

    __slots__ = ("_lock",)

    def __init__(self):
        self._lock = threading.Lock()
        self._lock.acquire()

    def reset(self):
        self._lock.acquire(blocking=False)

    def wait(self, timeout):
        return self._lock.acquire(timeout=-1 if timeout is None else max(timeout, 0))

    def wake(self):
        try:
            self._lock.release()
        except RuntimeError:  # already woken
            pass


class _Call:
    """One request: its outcome, once its reply has come, and who waits for it."""

    __slots__ = ("done", "result", "error", "waiter", "callback")

    def __init__(self):
        self.done = False
        self.result = None
        self.error = None
        self.waiter = None  # a _Waiter blocked on this call
        self.callback = None  # called with no argument once done (an await)


# Signals the watcher waits for: the kernel sends SIGNAL to the watcher
# thread when data arrives on the channel while no thread reads it.
SIGNAL = signal.SIGURG  # ignored by default, should the watcher be gone
F_SETOWN_EX, F_OWNER_TID = 15, 0  # Linux's fcntl to direct it to one thread
_tls = threading.local()


def _waiter():
    w = getattr(_tls, "waiter", None)
    if w is None:
        w = _tls.waiter = _Waiter()
    return w


class Channel:
    """The protocol over two private fds.

    Whichever thread waits for something from the host reads the channel
    itself: a blocking _sync call, the event loop of the run's top-level
    await (in its selector), the main thread waiting for the next run. One
    thread reads at a time (the reader); others waiting meanwhile follow,
    each woken when its reply is dispatched or when the reader's role is
    handed to it. While no thread reads (user code is running), the kernel
    signals the watcher thread when data arrives (O_ASYNC, SIGNAL directed
    at that thread), and the watcher reads what came: an interrupt, or a
    reply nobody waits for yet. So a reply wakes exactly the thread that
    waits for it, with no hand-off between threads. Where that signal cannot
    be set up, the watcher reads all the time and every waiter follows.
    """

    def __init__(self, fd_in, fd_out):
        self._in = fd_in
        self._out = fd_out
        self._wlock = threading.Lock()
        self._lock = threading.Lock()  # guards the fields below
        self._pending = {}  # request id -> _Call
        self._next_id = 0
        self._eof = None  # why reading stopped, once it has
        self._reader = None  # the _Waiter of the thread reading now
        self._followers = []  # _Waiters of threads waiting while another reads
        self._runs = collections.deque()  # 'C' payloads, then None when the host is gone
        self._run_waiter = None  # the _Waiter of the thread waiting for a run
        self._awaits = 0  # calls awaited by an event loop
        self._armed = False  # O_ASYNC is set on fd_in
        self._buf = bytearray()  # read but not yet dispatched; only the reader touches it
        self._flags = fcntl.fcntl(fd_in, fcntl.F_GETFL) & ~os.O_ASYNC
        self.signals = False  # the watcher is woken by signals (else it reads all the time)
        self.max_request = 0  # largest request frame the host reads; 0 means no check
        self.max_attachment = 0  # largest image or file the host takes with a run's result
        self._ready = threading.Event()
        self._watcher = threading.Thread(target=self._watch, name="codebridge-reader", daemon=True)
        self.ended = lambda fd: os._exit(0)  # how to end when the host ends the stream

    def start(self):
        self._watcher.start()
        self._ready.wait()
        if self.signals:
            self._release(None)  # arms the signal

    # --- writing

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
        """Sends a 'Q' frame and returns its _Call, for wait or wait_async.

        The call fails with mcp.MCPError(message, code, data) when the host
        answers with an error or the channel is gone.
        """
        call = _Call()
        with self._lock:
            if self._eof is not None:
                return _failed(call, _make_error("internal", self._eof, None))
            self._next_id += 1
            rid = self._next_id
            self._pending[rid] = call
        try:
            payload = json.dumps({"id": rid, "method": method, "params": params},
                                 ensure_ascii=False, allow_nan=False).encode("utf-8", "surrogatepass")
        except (TypeError, ValueError) as e:
            self._forget(rid)
            return _failed(call, _make_error("bad_arguments", "arguments are not JSON-serializable: %s" % e, None))
        if self.max_request and len(payload) > self.max_request:
            self._forget(rid)
            return _failed(call, _make_error("bad_arguments", (
                "this %s request is %d bytes, over the %d bytes codebridge accepts (MCP_BRIDGE_MAX_ARGUMENT_SIZE): "
                "pass the data another way, e.g. a file path or URL the tool can read, or split it over several calls")
                % (method, len(payload), self.max_request), None))
        try:
            self.send(b"Q", payload)
        except BaseException as e:  # never leave a call unresolved
            self._forget(rid)
            if not call.done:
                _failed(call, _make_error("internal", "sending request: %s" % _str(e), None))
            if not isinstance(e, Exception):
                raise
        return call

    def call(self, method, params):
        """request and wait in one, for a blocking call: the calling thread
        takes the reader's role before it sends, when no thread reads, so
        the reply cannot reach another thread first."""
        w = _waiter()
        critical = _enter_critical()
        try:
            if self.signals and self._reader is None:
                with self._lock:
                    if self._reader is None:
                        self._take(w)
            try:
                call = self.request(method, params)
                if self._reader is w:
                    self._read(call, None)
            finally:
                self._release(w)  # if w took the role
        finally:
            _leave_critical(critical)  # raises a deferred KeyboardInterrupt
        return self.wait(call)

    def _forget(self, rid):
        with self._lock:
            self._pending.pop(rid, None)

    # --- waiting

    def wait(self, call):
        """Blocks until call is done and returns its result (or raises its error)."""
        if not call.done:
            self._wait_for(call, None)
        if call.error is not None:
            raise call.error
        return call.result

    async def wait_async(self, call):
        """Awaits call in the running event loop."""
        if not call.done:
            import asyncio  # loaded already: a loop runs

            loop = asyncio.get_running_loop()
            fut = loop.create_future()
            with self._lock:
                if not call.done:
                    call.callback = functools.partial(_resolve, loop, fut, threading.get_ident())
                    self._awaits += 1
            if not call.done:
                try:
                    await fut
                finally:
                    with self._lock:
                        if call.callback is not None:  # cancelled before the reply
                            call.callback = None
                            self._awaits -= 1
        if call.error is not None:
            raise call.error
        return call.result

    def next_run(self, timeout):
        """The next 'C' payload, or None when the host is gone; raises
        queue.Empty when none came within timeout seconds (None: no limit)."""
        if not self._runs and not self._wait_for(None, timeout):
            raise _queue.Empty
        with self._lock:
            return self._runs.popleft()

    def _wait_for(self, call, timeout):
        """Blocks until call is done (None: until a run frame has come),
        reading the channel while no other thread does. False on timeout."""
        w = _waiter()
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            lead = False
            with self._lock:
                done = call.done if call is not None else bool(self._runs)
                if not done:
                    if self._reader is None:
                        self._take(w)
                    lead = self._reader is w
                    if not lead:
                        w.reset()
                        if call is not None:
                            call.waiter = w
                        else:
                            self._run_waiter = w
                        self._followers.append(w)
                elif self._reader is w:  # handed the role as the reply came
                    lead = True
            if done:
                if lead:
                    self._release(w)
                return True
            if lead:
                critical = _enter_critical()
                try:
                    self._read(call, deadline)
                finally:
                    self._release(w)
                    _leave_critical(critical)  # raises a deferred KeyboardInterrupt
            else:
                woken = False
                try:
                    woken = w.wait(None if deadline is None else deadline - time.monotonic())
                finally:
                    with self._lock:
                        if w in self._followers:
                            self._followers.remove(w)
                        handed = self._reader is w
                        if call is not None:
                            call.waiter = None
                        elif self._run_waiter is w:
                            self._run_waiter = None
                    if handed and not woken:  # leaving with the role (timeout, KeyboardInterrupt): pass it on
                        self._release(w)
            if deadline is not None and time.monotonic() >= deadline and not (call.done if call is not None else self._runs):
                return False

    def _take(self, w):
        """Makes w the reader; under _lock."""
        self._reader = w
        if self._armed:
            self._armed = False
            fcntl.fcntl(self._in, fcntl.F_SETFL, self._flags)

    def _release(self, w):
        """Hands the reader's role on: to a follower, else to the watcher's
        signal, checking for what came before it was armed."""
        with self._lock:
            if self._reader is not w:
                return
            if self._followers:
                self._reader = self._followers.pop(0)
                self._reader.wake()
                return
            self._reader = None
            if self._eof is not None:
                return
            self._armed = True
            fcntl.fcntl(self._in, fcntl.F_SETFL, self._flags | os.O_ASYNC)
        if self._complete_frame() or select.select([self._in], [], [], 0)[0]:
            signal.pthread_kill(self._watcher.ident, SIGNAL)

    def try_lead(self):
        """Makes the calling thread the reader if no thread is, for an event
        loop about to wait; its _Waiter, or None."""
        if not self._awaits or self._reader is not None or not self.signals:
            return None
        w = _waiter()
        with self._lock:
            if self._reader is not None:
                return None
            self._take(w)
        return w

    def select(self, w, selector, select, timeout):
        """An event loop's selector wait while its thread reads the channel:
        frames that came are dispatched (awaits resolved in place), and the
        role is released before the loop runs its callbacks."""
        critical = _enter_critical()
        try:
            if self._complete_frame():
                timeout = 0
            selector.register(self._in, selectors.EVENT_READ)
            try:
                events = select(timeout)
            finally:
                selector.unregister(self._in)
            ready = False
            for i, (key, _) in enumerate(events):
                if key.fd == self._in:
                    ready = True
                    del events[i]
                    break
            if ready:
                self._drain(True)
        finally:
            self._release(w)
            _leave_critical(critical)
        return events

    # --- reading (only the reader)

    def _complete_frame(self):
        buf = self._buf
        return len(buf) >= 5 and len(buf) >= 5 + int.from_bytes(buf[1:5], "big")

    def _read(self, call, deadline):
        """Reads and dispatches frames until call is done (None: until a run
        frame has come), the main thread has an interrupt to raise, or
        deadline (None: none) passes."""
        try:
            while True:
                self._dispatch_buffered()
                if self._eof is not None or (call.done if call is not None else self._runs):
                    return
                if _deferred and threading.get_ident() == _MAIN:
                    return
                if deadline is not None and not select.select([self._in], [], [], max(deadline - time.monotonic(), 0))[0]:
                    return
                self._fill()
        except Exception as e:  # a broken stream fails every pending request
            self._gone("reading replies: %s" % e, False)

    def _drain(self, ready=False):
        """Reads and dispatches what has come, without blocking; ready: the
        fd is known to be readable."""
        try:
            self._dispatch_buffered()
            while ready or select.select([self._in], [], [], 0)[0]:
                full = self._fill()
                self._dispatch_buffered()
                if not full:  # a short read took all there was
                    break
                ready = False
        except Exception as e:
            self._gone("reading replies: %s" % e, False)

    def _fill(self):
        """One read into the buffer; True when it filled what it asked for
        (more may be waiting)."""
        buf = self._buf
        n = 1 << 16
        if len(buf) >= 5:
            n = min(max(n, 5 + int.from_bytes(buf[1:5], "big") - len(buf)), 1 << 24)
        data = os.read(self._in, n)
        if not data:
            self._gone("the host closed the connection", True)
            return False
        buf += data
        return len(data) == n

    def _dispatch_buffered(self):
        buf = self._buf
        while len(buf) >= 5:
            end = 5 + int.from_bytes(buf[1:5], "big")
            if len(buf) < end:
                return
            kind = buf[0]
            body = bytes(buf[5:end])
            del buf[:end]
            if kind == 0x52:  # 'R'
                self._reply(json.loads(body))
            elif kind == 0x43:  # 'C'
                msg = json.loads(body)
                with self._lock:
                    self._runs.append(msg)
                    if self._run_waiter is not None:
                        self._run_waiter.wake()
            elif kind == 0x49:  # 'I'
                _interrupt(json.loads(body).get("run"))

    def _reply(self, reply):
        with self._lock:
            call = self._pending.pop(reply.get("id"), None)
            if call is None or call.done:
                return
            err = reply.get("error")
            if err is not None:
                call.error = _make_error(err.get("code") or "internal", err.get("message") or "", err.get("data"))
            else:
                call.result = reply.get("result")
            callback = self._done(call)
        if callback is not None:
            callback()

    def _done(self, call):
        """Marks call done and wakes its waiter; under _lock. Returns the
        callback of an await, to be called after releasing the lock."""
        call.done = True
        if call.waiter is not None:
            call.waiter.wake()
        callback, call.callback = call.callback, None
        if callback is not None:
            self._awaits -= 1
        return callback

    def _gone(self, reason, eof):
        """Reading stopped: every pending request fails, and the main loop
        sees the end; when the host is gone, the process ends at once."""
        with self._lock:
            self._eof = reason
            pending, self._pending = self._pending, {}
            callbacks = []
            for call in pending.values():
                if not call.done:
                    call.error = _make_error("internal", reason, None)
                    callbacks.append(self._done(call))
            # The main loop sees the end, unless the host is gone: then the
            # process ends below, perhaps after a delay (ended) during which
            # the main loop must keep waiting, not exit at once.
            if eof:
                waiting = [w for w in self._followers if w is not self._run_waiter]
            else:
                self._runs.append(None)
                waiting = self._followers + [self._run_waiter]
            for w in waiting:
                if w is not None:
                    w.wake()
        for cb in callbacks:
            if cb is not None:
                cb()
        if eof:
            # The host is gone (closed the stream, or died): no one reads
            # what a run in progress would report, so end rather than after
            # it (ended spreads the exits of a host's many sandboxes). The
            # container ends with this process, and the engine removes it.
            self.ended(self._in)

    # --- the watcher

    def _watch(self):
        w = _waiter()
        try:
            signal.pthread_sigmask(signal.SIG_BLOCK, {SIGNAL})
            fcntl.fcntl(self._in, fcntl.F_SETSIG, SIGNAL)
            fcntl.fcntl(self._in, F_SETOWN_EX, struct.pack("ii", F_OWNER_TID, threading.get_native_id()))
            self.signals = True
        except Exception:  # no thread-directed signals here: read all the time
            with self._lock:
                self._take(w)
        self._ready.set()
        if not self.signals:
            self._read(_Call(), None)  # until the stream ends
            return
        while True:
            signal.sigwaitinfo({SIGNAL})
            with self._lock:
                if self._reader is not None:
                    continue
                self._take(w)
            try:
                self._drain()
            finally:
                self._release(w)


def _failed(call, error):
    call.error = error
    call.done = True
    return call


def _resolve(loop, fut, thread):
    """Wakes the task awaiting fut: in place on the loop's own thread."""
    try:
        if threading.get_ident() == thread:
            _set_none(fut)
        else:
            loop.call_soon_threadsafe(_set_none, fut)
    except RuntimeError:  # the loop is closed
        pass


def _set_none(fut):
    if not fut.done():
        fut.set_result(None)


def _make_error(code, message, data):
    mcp = sys.modules.get("mcp")
    cls = getattr(mcp, "MCPError", None) if mcp is not None else None
    if cls is None:
        return RuntimeError("%s: %s" % (code, message))
    return cls(message, code=code, data=data)


def _interrupt(run):
    """Raises KeyboardInterrupt in the main thread if run is still running,
    or makes it raise as it starts."""
    global _interrupted, _deferred
    _interrupted = max(_interrupted, run or 0)
    if run and run == _running:
        if _critical and threading.get_ident() == _MAIN and signal.getsignal(signal.SIGINT) is _on_sigint:
            _deferred = True  # the main thread read it: raised when it leaves the channel
            return
        try:
            signal.pthread_kill(_MAIN, signal.SIGINT)
        except Exception:
            pass


def _on_sigint(signum, frame):
    global _deferred
    if _critical:
        _deferred = True
    elif _running:
        raise KeyboardInterrupt


def _enter_critical():
    """Marks the main thread as reading the channel, where a KeyboardInterrupt
    would lose a frame read but not yet dispatched: one is deferred until
    _leave_critical. False on other threads."""
    global _critical
    if threading.get_ident() != _MAIN:
        return False
    _critical += 1
    return True


def _leave_critical(entered):
    global _critical, _deferred
    if not entered:
        return
    _critical -= 1
    if not _critical and _deferred:
        _deferred = False
        if _running:
            raise KeyboardInterrupt


class Pump:
    """Forwards one pipe to frames of one kind, in chunks of at most CHUNK bytes."""

    def __init__(self, channel, kind, fd):
        self._ch = channel
        self._kind = kind
        self._fd = fd
        os.set_blocking(fd, False)  # drain may take what woke the pump
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
                    try:
                        data = os.read(self._fd, CHUNK)
                    except BlockingIOError:  # drain took it
                        continue
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
        """Sends on everything written to the pipe before the call: what the
        pump has taken, once it has sent it (however long a loaded machine
        takes to schedule it, unless it has made no progress by deadline: the
        host stopped reading), and the rest itself, which spares a run's end
        the wait for the pump to be scheduled. What a background writer adds
        meanwhile is not waited for: it goes out with a later run."""
        n = array.array("i", [0])
        with self._cond:
            try:
                fcntl.ioctl(self._fd, FIONREAD, n)
            except OSError:
                return
            target = self._taken + n[0]
            while self._sent < target and self._thread.is_alive():
                if self._taken == self._sent:  # the pump holds nothing: send the rest from here
                    try:
                        data = os.read(self._fd, min(target - self._taken, CHUNK))
                    except BlockingIOError:
                        return
                    if not data:
                        return
                    self._taken += len(data)
                    self._ch.send(self._kind, data)  # under the lock, so the pump sends nothing before it
                    self._sent += len(data)
                    continue
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
    # Written a line at a time: python3 -u makes the text layer write each
    # piece of a print at once (print(1) was two writes, so two wake-ups of
    # the pump and two frames). A line without its newline is sent on by
    # the next line, a flush, or the run's end (_flush_all).
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(encoding="utf-8", errors="backslashreplace", line_buffering=True, write_through=False)
        except Exception:
            pass
    return pumps


_libc = None  # the C library through ctypes, loaded once by _trim (None without ctypes)


def _flush_all():
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except Exception:
            pass
    if _libc is not None:  # C stdio buffers of extensions (e.g. printf)
        try:
            _libc.fflush(None)
        except Exception:
            pass


def _user_stack(stack):
    """Frames from the first frame of the user's code on, without our own."""
    import traceback

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
    import traceback

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
    return compile(src, filename, mode, flags=_ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)


class _ChannelSelector(selectors.DefaultSelector):
    """The selector of a run's event loop: while the loop waits for replies
    to awaited calls, it reads the channel itself in its wait."""

    def __init__(self, channel):
        super().__init__()
        self._channel = channel

    def select(self, timeout=None):
        w = self._channel.try_lead()
        if w is None:
            return super().select(timeout)
        return self._channel.select(w, self, super().select, timeout)


def _run_code(code, namespace, channel):
    if code.co_flags & CO_COROUTINE:
        # Imported on the first run that awaits, not at start: asyncio (with
        # ssl) is a quarter of an idle session's memory.
        import asyncio

        if channel.signals:
            loop = asyncio.SelectorEventLoop(_ChannelSelector(channel))
        else:
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


_preload_missing = None  # the modules to preload that the image lacks, for the first exit frame


def _preload(modules):
    """Imports modules in a background thread while the interpreter waits for
    its first run; code importing one meanwhile waits for that import only.
    One that is not installed is skipped, and named in the first exit frame,
    so the host can size its limits by what the image holds."""
    global _preload_missing
    if not modules:
        return
    import importlib.util

    # A top-level name's spec is found without importing anything.
    _preload_missing = [m for m in modules if importlib.util.find_spec(m.partition(".")[0]) is None]

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
            _check_saved(name, s.get("source") or "")
            exec(_compile(s.get("source") or "", "<saved tool %s>" % name), namespace)
        except BaseException as e:
            sys.stderr.write("codebridge: saved helper %r could not be defined: %s: %s\n" % (name, type(e).__name__, _str(e)))


def _check_saved(name, source):
    """Raises ValueError unless source is one top-level def of name with no
    decorators: the host checked it with its own tokenizer when it was
    saved; this is the same check by this Python's own parser, in a fresh
    session, in case the two read a source differently."""
    import ast

    tree = ast.parse(source, "<saved tool %s>" % name)
    body = tree.body
    if len(body) != 1 or not isinstance(body[0], (ast.FunctionDef, ast.AsyncFunctionDef)) or body[0].name != name:
        raise ValueError("it is not one def %s(...): codebridge defines only that" % name)
    if body[0].decorator_list:
        raise ValueError("it has decorators")


def _names_tools(src, namespace):
    """Whether src may call a tool: it names a helper, or a name an earlier
    run bound to a proxy or a tool function."""
    if "mcp" in src or "call_tool" in src:
        return True
    runtime = sys.modules.get("mcp.runtime")
    if runtime is None:
        return False
    kinds = (runtime.ServerProxy, runtime._SyncTools)
    for name, value in namespace.items():
        if (isinstance(value, kinds) or getattr(value, "tool", None) is not None
                and str(getattr(value, "__module__", "")).startswith("mcp.servers.")) and name in src:
            return True
    return False


def _check_args(src, filename, namespace):
    """The failure of a run whose tool calls do not match their tools'
    signatures (mcp._check), before any of its lines runs; else None. Code
    that names no helper is not parsed (nor ast imported). A fault of the
    check itself skips it, with a note on stderr: the run goes on."""
    if not _names_tools(src, namespace):
        return None
    from mcp import _check

    try:
        tree = compile(src, filename, "exec", flags=_ast.PyCF_ONLY_AST | _ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
        _check.check(src, tree, namespace)
    except Exception as e:
        if isinstance(e, _check.ArgumentCheckError):
            return {"kind": _check.KIND, "type": type(e).__name__, "message": _clip(_str(e))}
        sys.stderr.write("codebridge: the argument check before the run was skipped: %s: %s\n" % (type(e).__name__, _str(e)))
    return None


def _send_figures(mcp):
    """Returns the figures the run left open with its result."""
    try:
        mcp.results._send_open_figures()
    except BaseException as e:
        sys.stderr.write("codebridge: returning the open matplotlib figures failed: %s: %s\n" % (type(e).__name__, _str(e)))


def _run(msg, namespace, mcp, pumps, channel):
    """One run: its code in the session's namespace, then its exit frame."""
    global _running, _preload_missing
    n = msg.get("run") or 0
    if msg.get("prelude"):
        _prelude(msg["prelude"], namespace)
    if mcp is not None:
        mcp._refresh(msg.get("servers") or [], namespace)
    exit_code, failure = 0, None
    try:
        try:
            src = msg.get("code") or ""
            code = _compile(src, "%s #%d>" % (FILE_PREFIX, n))
            _running = n  # set before checking _interrupted: see _interrupt
            try:
                if _interrupted >= n:
                    raise KeyboardInterrupt
                if msg.get("check_args") and mcp is not None:
                    failure = _check_args(src, code.co_filename, namespace)
                if failure is not None:
                    exit_code = 1
                else:
                    _run_code(code, namespace, channel)
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
    if _preload_missing:
        exit_frame["preload_missing"] = _preload_missing
    _preload_missing = None
    channel.send(b"X", json.dumps(exit_frame, ensure_ascii=False).encode("utf-8", "backslashreplace"))


def _trim():
    """Gives the system back the memory start-up freed, which glibc's malloc
    keeps otherwise: about 0.9 MB of an idle session's 9.4 MB. Keeps the C
    library's handle for _flush_all: making one costs 35 us."""
    global _libc
    try:
        import ctypes

        _libc = ctypes.CDLL(None)
    except Exception:  # no ctypes: nothing to trim or flush
        return
    try:
        _libc.malloc_trim(0)
    except Exception:  # not glibc: nothing to give back
        pass


def main(start, fd_in=0, fd_out=1, ended=None):
    global STREAM
    if fd_in not in (0, 1, 2):
        STREAM = "socket"
    proto_in = os.dup(fd_in)  # os.dup makes non-inheritable descriptors
    proto_out = os.dup(fd_out)
    for fd in {fd_in, fd_out} - {0, 1, 2}:
        os.close(fd)  # a socket the bootstrap connected: now only the dups
    channel = Channel(proto_in, proto_out)
    if ended is not None:
        channel.ended = ended
    channel.max_request = int(start.get("max_request") or 0)
    channel.max_attachment = int(start.get("max_attachment") or 0)
    pumps = _redirect_stdio(channel)
    signal.signal(signal.SIGINT, _on_sigint)
    channel.start()
    sys.argv = [""]
    namespace, mcp = _namespace(channel)
    _preload(start.get("preload"))
    _trim()
    # Like the bootstrap, give up when nothing comes for the wait limit: a
    # codebridge killed hard leaves no interpreter waiting for ever. The start
    # frame's, if any, else the environment's.
    wait = float(start.get("wait_limit") or os.environ.get("CODEBRIDGE_WAIT_LIMIT") or 0) or None
    while True:
        try:
            msg = channel.next_run(wait)
        except KeyboardInterrupt:  # a late interrupt between runs
            continue
        except _queue.Empty:
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
