package pool

import (
	"context"
	"fmt"
)

// A listing from one server (tools, resources, resource templates,
// prompts) holds at most MaxListed items in at most MaxListPages pages: a
// server that lists more, or pages without end, fails the listing.
const (
	MaxListed    = 4096
	MaxListPages = 256
)

// page lists one page of a listing from cursor ("" for the first), and
// returns its items and the next page's cursor ("" after the last).
type page[T any] func(ctx context.Context, cursor string) (items []T, next string, err error)

// listPages lists every page of what, within [MaxListed] and [MaxListPages].
func listPages[T any](ctx context.Context, what string, list page[T]) ([]T, error) {
	var out []T
	cursor := ""
	for pages := 1; ; pages++ {
		items, next, err := list(ctx, cursor)
		if err != nil {
			return nil, err
		}
		out = append(out, items...)
		switch {
		case len(out) > MaxListed:
			return nil, fmt.Errorf("the server lists more than %d %s, the most codebridge takes from one server", MaxListed, what)
		case next == "":
			return out, nil
		case pages == MaxListPages:
			return nil, fmt.Errorf("the server lists its %s in more than %d pages, the most codebridge reads", what, MaxListPages)
		}
		cursor = next
	}
}
