package settings

import (
	"errors"
	"fmt"
	"math"
	"strconv"
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
