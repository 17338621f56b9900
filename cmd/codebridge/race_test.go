//go:build race

package main

// raceEnabled: the tests run under the race detector, which CI does beside
// the rest of the suite.
const raceEnabled = true
