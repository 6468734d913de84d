package main

import (
	"fmt"
	"strings"
	"time"
)

// count writes n things as people write them: "1 address", "3 addresses".
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// durationWords writes d in words, largest unit first, leaving out the units
// that are zero: "24 hours", "1 hour 30 minutes", "45 seconds" (not Go's
// "24h0m0s", which people misread).
func durationWords(d time.Duration) string {
	if d <= 0 {
		return "0 seconds"
	}
	d = d.Round(time.Second)
	var parts []string
	for _, u := range []struct {
		d         time.Duration
		one, many string
	}{{24 * time.Hour, "day", "days"}, {time.Hour, "hour", "hours"}, {time.Minute, "minute", "minutes"}, {time.Second, "second", "seconds"}} {
		if n := int(d / u.d); n > 0 {
			parts = append(parts, count(n, u.one, u.many))
			d -= time.Duration(n) * u.d
		}
	}
	if len(parts) == 0 {
		return "under a second"
	}
	return strings.Join(parts, " ")
}
