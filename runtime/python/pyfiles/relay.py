# codebridge relay: run by `python3 -I -S -c` in a Kubernetes sandbox pod, with
# the name of the abstract unix socket the pod's interpreter serves its stream
# on (CODEBRIDGE_SERVE) as its argument. It copies its stdin to that socket and
# the socket to its stdout, and exits when either ends: codebridge reaches the
# interpreter through the API server's exec stream, and a replica that dies
# takes only this relay with it.
#
# A pod is running once its process has started, which may be before the
# interpreter listens (more so on a busy node): while nothing listens yet the
# relay tries again, for up to a minute. If the interpreter exits meanwhile,
# its container ends and this relay with it.
import errno, os, socket, sys, threading, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
_until = time.monotonic() + 60
while True:
    try:
        s.connect("\0" + sys.argv[1])
        break
    except OSError as e:
        if e.errno == errno.ECONNREFUSED and time.monotonic() < _until:
            time.sleep(0.01)
            continue
        sys.stderr.write("codebridge relay: the sandbox's interpreter does not answer (it exited?): %s\n" % e)
        os._exit(3)
def up():
    while True:
        b = os.read(0, 1 << 16)
        if not b:
            os._exit(0)  # codebridge closed the stream
        s.sendall(b)
threading.Thread(target=up, daemon=True).start()
while True:
    b = s.recv(1 << 16)
    if not b:
        os._exit(0)  # the interpreter ended, or took a newer connection
    v = memoryview(b)
    while v:
        v = v[os.write(1, v):]
