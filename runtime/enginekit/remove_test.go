package enginekit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestRemoveEach: every container is asked for, never more than
// removeParallel at once; the count is of those removed and the error joins
// the others'.
func TestRemoveEach(t *testing.T) {
	var ids []string
	for i := range 50 {
		ids = append(ids, fmt.Sprint(i))
	}
	var (
		mu            sync.Mutex
		asked         = map[string]bool{}
		running, most int
	)
	n, err := RemoveEach(t.Context(), ids, func(ctx context.Context, id string) error {
		mu.Lock()
		asked[id] = true
		running++
		most = max(most, running)
		mu.Unlock()
		defer func() { mu.Lock(); running--; mu.Unlock() }()
		if strings.HasSuffix(id, "7") {
			return errors.New("cannot remove " + id)
		}
		return nil
	})
	if len(asked) != len(ids) {
		t.Errorf("asked for %d containers, want %d", len(asked), len(ids))
	}
	if most > removeParallel {
		t.Errorf("%d removals at once, want at most %d", most, removeParallel)
	}
	if n != 45 {
		t.Errorf("removed %d, want 45", n)
	}
	for _, id := range []string{"7", "17", "27", "37", "47"} {
		if err == nil || !strings.Contains(err.Error(), "cannot remove "+id+"\n") && !strings.HasSuffix(err.Error(), "cannot remove "+id) {
			t.Errorf("error %v lacks container %s's", err, id)
		}
	}
	if n, err := RemoveEach(t.Context(), nil, nil); n != 0 || err != nil {
		t.Errorf("nothing to remove: %d, %v", n, err)
	}
}
