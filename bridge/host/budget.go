package host

import (
	"context"
	"fmt"

	"golang.org/x/sync/semaphore"

	"github.com/codebridge-mcp/codebridge/runtime/python/protocol"
)

// DefaultResultBudget is how many bytes of downstream results the tool
// calls of one process hold at once, encoded, while they are masked,
// audited and handed to their sandbox.
const DefaultResultBudget = 256 << 20

// byteBudget bounds the bytes that results hold at once: a call whose
// result does not fit waits for others to finish with theirs.
type byteBudget struct {
	sem  *semaphore.Weighted
	size int64
}

func newByteBudget(size int64) *byteBudget {
	return &byteBudget{sem: semaphore.NewWeighted(size), size: size}
}

// hold takes n bytes of the budget for the result of server's tool, waiting
// while ctx allows; release gives them back.
func (b *byteBudget) hold(ctx context.Context, n int, server, tool string) (release func(), err error) {
	if int64(n) > b.size {
		return nil, &protocol.Error{Code: protocol.CodeTooLarge, Message: fmt.Sprintf(
			"the result of %s.%s is %s, over the %s of results codebridge holds at once: ask the tool for less (a page, a filter)",
			server, tool, ByteSize(n), ByteSize(int(b.size)))}
	}
	if err := b.sem.Acquire(ctx, int64(n)); err != nil {
		return nil, fmt.Errorf("waiting for room for the result of %s.%s (%s), while other calls hold the %s that results may: %w",
			server, tool, ByteSize(n), ByteSize(int(b.size)), err)
	}
	return func() { b.sem.Release(int64(n)) }, nil
}
