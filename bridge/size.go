package bridge

import (
	"errors"
	"strconv"
	"strings"
	"time"
)

// ParseSize reads a byte count such as "512m", "64k", "1g" or "1048576"
// (binary multiples, as Podman's --memory does).
func ParseSize(s string) (int64, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	s = strings.TrimSuffix(strings.TrimSuffix(s, "ib"), "b")
	mult := int64(1)
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 'k':
			mult, s = 1<<10, s[:n-1]
		case 'm':
			mult, s = 1<<20, s[:n-1]
		case 'g':
			mult, s = 1<<30, s[:n-1]
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n > (1<<50)/mult {
		return 0, errors.New("want a positive size such as 512m, 64k or 1g")
	}
	return n * mult, nil
}

// parseSeconds reads whole seconds ("30", as the reference bridge does) or a Go
// duration ("45s", "2m").
func parseSeconds(s string) (time.Duration, error) {
	var d time.Duration
	if n, err := strconv.Atoi(s); err == nil {
		d = time.Duration(n) * time.Second
	} else if d, err = time.ParseDuration(s); err != nil {
		return 0, errors.New("want whole seconds such as 30, or a duration such as 45s")
	}
	if d <= 0 {
		return 0, errors.New("want a positive duration")
	}
	return d, nil
}

func parsePositive(s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, errors.New("want a positive whole number")
	}
	return n, nil
}
