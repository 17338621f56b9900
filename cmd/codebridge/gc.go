package main

import (
	"os"
	"runtime/debug"
)

// serverGCPercent is the GOGC a `serve --http` codebridge works to unless
// the environment sets GOGC. Each collection scans every goroutine's stack,
// and a live session keeps about eight goroutines, so with GOGC 100 the
// collector's share of a run grows with the sessions (docs/performance.md,
// "Design decisions"). A stdio codebridge holds one session and keeps Go's
// default: there the heap is a session's cost.
const serverGCPercent = 400

// useServerGC makes serverGCPercent the GOGC, unless the environment sets
// GOGC.
func useServerGC() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(serverGCPercent)
	}
}
