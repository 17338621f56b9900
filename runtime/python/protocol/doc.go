// Package protocol is the wire protocol between codebridge and the Python
// sandbox: the frames each side sends, the methods the sandbox's requests
// name with their parameter and result types, the error codes of a failed
// request, and the table that dispatches a request to a [Handler].
//
// The Python half is runtime/python/pyfiles (codebridge_runner.py frames,
// mcp/*.py methods); package python runs it and carries the frames.
//
// # Wire protocol
//
// All traffic uses one stream: a unix socket the bootstrap connects to when
// python.ChannelEnv names one, else the container's attached stdin (host →
// sandbox) and stdout (sandbox → host). Each message is a frame:
//
//	1 byte kind | 4 bytes big-endian payload length | payload
//
// Kinds from the host:
//
//	'S' start      JSON [Init]: the helper module sources and saved helpers. Sent once, first.
//	'C' run        JSON [RunFrame]: one run's code and the servers it can see.
//	'R' reply      JSON [Reply] to a 'Q' request, matched by id.
//	'I' interrupt  JSON [Interrupt]: stop the given run's code.
//
// Kinds from the sandbox, each with a size limit the host checks before
// reading the payload:
//
//	'O' stdout   raw bytes written to fd 1 by the code or any child process (64 KiB)
//	'E' stderr   raw bytes written to fd 2 (64 KiB)
//	'Q' request  JSON [Request] for the host (4 MiB + 64 KiB by default; python.Limits)
//	'X' exit     JSON [Exit]: how one run ended (1 MiB)
//
// Before running user code the runner moves the protocol onto private file
// descriptors and points fds 0, 1 and 2 at /dev/null and pipes, so nothing the
// code, a subprocess or a C extension writes can corrupt the framing. Output is
// chunked, so no line length limit exists anywhere. Output that arrives between
// runs (from threads the code left running) is kept, up to 16 KiB, and
// returned with the next run as python.Result.Background.
//
// # Requests
//
// A 'Q' frame's [Request] names a method (the Method constants) and carries
// its parameters as JSON; the host answers with a [Reply] carrying the
// method's result type, or an [Error] with a [Code]. The sandbox raises an
// error as MCPError with the same code, message and data. [Dispatch] decodes
// the parameters and calls the [Handler] method of that name.
package protocol
