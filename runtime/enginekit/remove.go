package enginekit

import (
	"context"
	"errors"
	"sync"

	"golang.org/x/sync/errgroup"
)

// RemoveEach removes each of the containers ids with remove, several at once
// (a thousand leftovers must not hold up a start for minutes), and says how
// many it removed; the errors of the others are joined. It is how every
// driver's [Conn.RemoveStale] and [Conn.RemoveByClient] remove what they
// found.
func RemoveEach(ctx context.Context, ids []string, remove func(ctx context.Context, id string) error) (int, error) {
	var (
		g    errgroup.Group
		mu   sync.Mutex
		n    int
		errs []error
	)
	g.SetLimit(removeParallel)
	for _, id := range ids {
		g.Go(func() error {
			err := remove(ctx, id)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			} else {
				n++
			}
			return nil
		})
	}
	g.Wait()
	return n, errors.Join(errs...)
}

// removeParallel is how many removals [RemoveEach] asks for at once.
const removeParallel = 8
