"""codebridge serve mode: a sandbox's stream that outlives its connections.

In a Kubernetes pod the stream runs through the API server, and a codebridge
replica that dies takes its connection with it; another replica must be able
to open a new one and find the interpreter as it was. So the bootstrap serves
the stream on an abstract unix socket in the pod (a relay that codebridge
runs in the pod connects to it), and this proxy stands between the
connections and the runner, which keeps one stream for its life (one end of a
socketpair). The proxy moves whole frames only, so a connection cut mid-frame
never leaves half a frame for the next one.

One connection at a time: a newer one replaces the current one. On each
connection after the first it first writes b"R" and the number of runs served
(4 bytes, big-endian): the first was greeted with b"N" by the bootstrap. When
a connection ends during a run, the run's pending requests are answered with
an error, the run is interrupted and its frames (output, exit) are dropped,
for no host waits for them; a run that does not stop within GRACE seconds
ends the interpreter, as the host would have killed it. Between connections
the runner's wait limit still ends an interpreter nobody uses. An interpreter
that has served no run ends with its first connection: a warm one whose
replica died or dropped it holds nothing worth keeping.
"""

import json
import os
import socket
import struct
import threading
import time

GRACE = 5.0  # seconds a run whose host went away has to stop after its interrupt
PARSE_LIMIT = 8 << 20  # largest exit or request frame read whole, to follow runs and requests
CHUNK = 1 << 16


def _read_frame(sock):
    """Reads one frame; returns (kind, payload), or None at the end."""
    head = _read_exact(sock, 5)
    if head is None:
        return None
    body = _read_exact(sock, int.from_bytes(head[1:], "big"))
    if body is None:
        return None
    return head[:1], body


def _read_exact(sock, n):
    buf = bytearray(n)
    view = memoryview(buf)
    while view:
        try:
            k = sock.recv_into(view)
        except OSError:
            return None
        if not k:
            return None
        view = view[k:]
    return bytes(buf)


def _frame(kind, payload):
    return kind + len(payload).to_bytes(4, "big") + payload


class Proxy:
    def __init__(self, listener, first, runner):
        self.listener = listener
        self.runner = runner  # the proxy's end of the runner's socketpair
        self.cond = threading.Condition()  # guards the fields below
        self.next = first  # a connection accepted, not yet served
        self.greeted = True  # whether self.next was greeted already
        self.conn = None  # the connection served
        self.run = 0  # the run in progress ('C' sent, 'X' not yet seen)
        self.runs = 0  # the highest run number seen
        self.orphan = 0  # a run whose host went away: its frames are dropped
        self.pending = set()  # ids of the requests of the run in progress not yet answered
        self.wlock = threading.Lock()  # whole frames to the connection
        self.rlock = threading.Lock()  # whole frames to the runner

    def start(self):
        for target, name in ((self._accept, "accept"), (self._up, "up"), (self._down, "down")):
            threading.Thread(target=_or_exit, args=(target,), name="codebridge-serve-" + name, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn = self.listener.accept()[0]
            except OSError:
                time.sleep(0.1)  # out of file descriptors: try again
                continue
            with self.cond:
                if self.next is not None:
                    self.next.close()
                self.next, self.greeted = conn, False
                if self.conn is not None:
                    try:
                        self.conn.shutdown(socket.SHUT_RDWR)  # the served one ends: _up takes the new one
                    except OSError:
                        pass
                self.cond.notify_all()

    def _to_runner(self, kind, payload):
        try:
            with self.rlock:
                self.runner.sendall(_frame(kind, payload))
        except OSError:
            os._exit(0)  # code closed or replaced the runner's stream: it has ended

    def _up(self):
        """Host to runner: serves one connection after the other."""
        while True:
            with self.cond:
                while self.next is None:
                    self.cond.wait()
                conn, greeted, self.next = self.next, self.greeted, None
            if not greeted:
                try:
                    with self.wlock:
                        conn.sendall(b"R" + struct.pack(">I", self.runs))
                except OSError:
                    conn.close()
                    continue
            with self.cond:
                self.conn = conn
            while True:
                f = _read_frame(conn)
                if f is None:
                    break
                kind, payload = f
                if kind == b"C":
                    with self.cond:
                        self.run = json.loads(payload).get("run") or 0
                        self.runs = max(self.runs, self.run)
                        self.orphan = 0
                        self.pending.clear()
                elif kind == b"R":
                    with self.cond:
                        self.pending.discard(json.loads(payload).get("id"))
                self._to_runner(kind, payload)
            with self.cond:
                self.conn = None
                served = self.runs
            conn.close()
            if not served:
                # A warm interpreter that no run has used: nothing to keep,
                # and its replica (gone, or done with it) would leave it waiting.
                os._exit(0)
            self._orphan()

    def _orphan(self):
        """Ends the run in progress, whose host went away."""
        with self.cond:
            run, self.orphan = self.run, self.run
            pending, self.pending = self.pending, set()
        if not run:
            return
        gone = {"code": "internal", "message": "codebridge lost its connection to this sandbox"}
        for rid in pending:
            self._to_runner(b"R", json.dumps({"id": rid, "error": gone}).encode())
        self._to_runner(b"I", json.dumps({"run": run}).encode())
        with self.cond:
            if not self.cond.wait_for(lambda: self.run != run, GRACE):
                os._exit(1)  # the code does not stop: nobody can use this interpreter any more

    def _down(self):
        """Runner to host, frame by frame, each streamed as it comes (so the
        host judges a frame's header as soon as it is written, as it would
        without the proxy); frames of an orphaned run are dropped."""
        while True:
            head = _read_exact(self.runner, 5)
            if head is None:
                os._exit(0)
            kind, n = head[:1], int.from_bytes(head[1:], "big")
            payload, msg = None, None
            if kind in (b"X", b"Q") and n <= PARSE_LIMIT:
                payload = _read_exact(self.runner, n)
                if payload is None:
                    os._exit(0)
                try:
                    msg = json.loads(payload)
                except ValueError:
                    pass  # not ours to judge: the host will
            with self.cond:
                orphaned = self.orphan and self.orphan == self.run
                if isinstance(msg, dict):
                    if kind == b"X":
                        self.run = 0
                        self.cond.notify_all()
                    elif not orphaned and self.run:
                        self.pending.add(msg.get("id"))
                conn = self.conn
            if orphaned or conn is None:
                if orphaned and kind == b"Q" and isinstance(msg, dict):
                    gone = {"code": "internal", "message": "codebridge lost its connection to this sandbox"}
                    self._to_runner(b"R", json.dumps({"id": msg.get("id"), "error": gone}).encode())
                if payload is None:
                    self._drain(None, n)
                continue  # no host waits for it
            with self.wlock:
                try:
                    if payload is not None:
                        conn.sendall(head + payload)
                    else:
                        try:
                            conn.sendall(head)
                        except OSError:
                            self._drain(None, n)
                            raise
                        self._drain(conn, n)
                except OSError:
                    try:
                        conn.shutdown(socket.SHUT_RDWR)  # _up sees the end
                    except OSError:
                        pass

    def _drain(self, to, n):
        """Moves the next n bytes of the runner's stream to the connection
        to, or drops them when to is None. When to fails, the rest of the
        frame is dropped (so the next frame starts whole) and OSError raised."""
        err = None
        while n:
            try:
                b = self.runner.recv(min(n, CHUNK))
            except OSError:
                b = b""  # code closed or replaced the runner's stream
            if not b:
                os._exit(0)
            n -= len(b)
            if to is not None and err is None:
                try:
                    to.sendall(b)
                except OSError as e:
                    err = e
        if err is not None:
            raise err


def _or_exit(target):
    """Runs a thread of the proxy; if it fails, the interpreter cannot be
    reached any more, so it ends."""
    try:
        target()
    except BaseException:
        os._exit(1)


def serve(listener, first):
    """Starts the proxy between connections to listener (first, greeted,
    served first) and the runner; returns the runner's end of the stream."""
    ours, theirs = socket.socketpair()
    Proxy(listener, first, ours).start()
    return theirs.detach()
