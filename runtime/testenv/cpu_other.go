//go:build !linux

package testenv

import "time"

// ProcessCPU is zeros where /proc is not there.
func ProcessCPU(int) (time.Duration, int) { return 0, 0 }
