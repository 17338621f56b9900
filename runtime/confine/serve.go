package confine

// A container whose stream must outlive the connection that carries it (a
// Kubernetes pod, whose stream runs through the API server and may be
// opened again by another codebridge replica) does not talk over its stdin
// and stdout: its process serves the stream on a unix socket inside its own
// network namespace, one connection at a time, and the engine reaches it by
// running a relay command in the container (stdin and stdout to and from
// that socket). When a connection ends the process keeps its state and
// accepts the next one; a newer connection replaces the current one.
//
// On each connection it accepts, the process first writes one byte:
// [ServeFresh] when it waits for its first frame, or [ServeResumed] followed
// by the number of runs it has served (4 bytes, big-endian) when it has
// served a connection before.
const (
	ServeFresh   = 'N'
	ServeResumed = 'R'
)
