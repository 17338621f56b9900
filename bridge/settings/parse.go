package settings

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// maxSeconds is the most whole seconds a time.Duration holds (about 292 years).
const maxSeconds = int64(math.MaxInt64 / time.Second)

// ParseSeconds reads whole seconds ("30", as the reference bridge does) or a Go
// duration ("45s", "2m"), as the time settings and `codebridge exec --timeout`
// take them. Zero, negative and out-of-range values are errors that say what
// is wanted.
func ParseSeconds(s string) (time.Duration, error) {
	var d time.Duration
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n > maxSeconds {
			return 0, fmt.Errorf("want at most %d seconds", maxSeconds)
		}
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

// ParseSize parses a size as Podman's --memory flag does: a number of bytes
// with an optional binary unit suffix b, k, m, g or t (case-insensitive,
// optionally followed by "b" or "ib"), e.g. "512m", "1.5g", "64MiB", "1048576".
// Every size setting is read with it; the packages that use a size take it
// in bytes.
func ParseSize(s string) (int64, error) {
	in := strings.TrimSpace(s)
	lower := strings.ToLower(in)
	i := strings.IndexFunc(lower, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := lower, ""
	if i >= 0 {
		num, unit = lower[:i], strings.TrimSpace(lower[i:])
	}
	var mult float64
	switch unit {
	case "", "b":
		mult = 1
	case "k", "kb", "kib":
		mult = 1 << 10
	case "m", "mb", "mib":
		mult = 1 << 20
	case "g", "gb", "gib":
		mult = 1 << 30
	case "t", "tb", "tib":
		mult = 1 << 40
	default:
		return 0, fmt.Errorf("invalid size %q: unknown unit %q (use b, k, m, g or t, e.g. 512m)", s, unit)
	}
	if num == "" {
		return 0, fmt.Errorf("invalid size %q: no number (e.g. 512m)", s)
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("invalid size %q: %q is not a number (e.g. 512m)", s, num)
	}
	v := f * mult
	if v < 1 || v >= math.MaxInt64 {
		return 0, fmt.Errorf("invalid size %q: must be between 1 byte and 8 EiB", s)
	}
	return int64(v), nil
}
