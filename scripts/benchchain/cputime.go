package main

import (
	"database/sql"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// cpuTimes is a reading of this process's CPU time and the machine's (Linux
// /proc), to say how busy the machine was while a measurement ran.
type cpuTimes struct {
	self        float64 // seconds of CPU this process used
	busy, total float64 // the machine's busy and total jiffies
}

func (c *cpuTimes) read() {
	const hz = 100 // USER_HZ
	if b, err := os.ReadFile("/proc/self/stat"); err == nil {
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i > 0 {
			f := strings.Fields(s[i+1:])
			if len(f) > 12 {
				u, _ := strconv.ParseFloat(f[11], 64)
				k, _ := strconv.ParseFloat(f[12], 64)
				c.self = (u + k) / hz
			}
		}
	}
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		line, _, _ := strings.Cut(string(b), "\n")
		f := strings.Fields(line)
		for i, v := range f[1:] {
			x, _ := strconv.ParseFloat(v, 64)
			c.total += x
			if i != 3 && i != 4 { // idle, iowait
				c.busy += x
			}
		}
	}
}

// machine says how busy the machine was between before and c.
func (c cpuTimes) machine(before cpuTimes) string {
	if c.total <= before.total {
		return "unknown"
	}
	return fmt.Sprintf("%.0f %% busy", 100*(c.busy-before.busy)/(c.total-before.total))
}

// pgBackends sums the CPU time of the PostgreSQL backends serving connections
// named app (application_name), when the server runs on this machine; −1 when it
// cannot tell (another machine, SQLite).
func pgBackends(db *sql.DB, app string) float64 {
	if db == nil {
		return -1
	}
	rows, err := db.Query("SELECT pid FROM pg_stat_activity WHERE application_name = $1", app)
	if err != nil {
		return -1
	}
	defer rows.Close()
	total, seen := 0.0, false
	for rows.Next() {
		var pid int
		if rows.Scan(&pid) != nil {
			return -1
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return -1
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		f := strings.Fields(s[i+1:])
		u, _ := strconv.ParseFloat(f[11], 64)
		k, _ := strconv.ParseFloat(f[12], 64)
		total += (u + k) / 100
		seen = true
	}
	if !seen {
		return -1
	}
	return total
}
