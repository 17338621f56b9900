package python

import (
	"context"
	"errors"
	"io"
)

// Command is the argv a sandbox container runs. The bootstrap it contains waits
// for the 'S' frame on stdin, so a container may be started before any code is known.
func Command() []string {
	return []string{"python3", "-I", "-u", "-c", "raise SystemExit('TODO: bootstrap')"}
}

// Exec drives one run over a started container's stdio: it sends the start frame,
// serves the sandbox's requests through h, collects output within p.OutputLimit,
// and returns when the exit frame arrives, stdout ends, or ctx is done. It always
// returns the Result as far as the run got; the error is ctx's or a protocol fault.
func Exec(ctx context.Context, stdin io.Writer, stdout io.Reader, p Program, h Host) (*Result, error) {
	return &Result{}, errors.New("TODO")
}
