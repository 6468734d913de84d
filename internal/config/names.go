package config

import (
	"maps"
	"regexp"
	"slices"
	"strings"
)

// Names returns the name of every setting the service reads with the
// environment getenv gives, sorted: the fixed ones and the ones made of a
// configured network's name (XPUB_BEP20, CHAIN_RPC_HEADERS_TRC20_1, …). The
// list is what Load asks getenv for, so it cannot drift from Load; Load runs
// again with every setting that chooses between branches (RATE_SOURCE,
// SCREENING, APP_ENV, a network's providers) set to open each branch, so a
// setting read only on the other side of one is known too.
func Names(getenv func(string) string) []string {
	seen := map[string]bool{}
	record := func(overlay map[string]string) {
		_, _ = Load(func(k string) string {
			seen[k] = true
			if v, ok := overlay[k]; ok {
				return v
			}
			return getenv(k)
		})
	}
	record(nil)
	for _, overlay := range []map[string]string{
		{"RATE_SOURCE": "static"},
		{"RATE_SOURCE": "http", "SCREENING": "list,oracle,api", "APP_ENV": string(Production)},
	} {
		// A network's per-provider settings are read once it has a provider.
		for k := range maps.Clone(seen) {
			if strings.HasPrefix(k, "CHAIN_RPC_") && strings.Count(k, "_") == 2 && k != "CHAIN_RPC_TIMEOUT" && getenv(k) == "" {
				overlay[k] = "http://127.0.0.1:1"
			}
		}
		record(overlay)
	}
	return slices.Sorted(maps.Keys(seen))
}

// NearMiss is an environment variable that is not a setting but is spelled
// almost like one: most likely a misspelt setting, which would otherwise be
// silently ignored (and its default used).
type NearMiss struct {
	// Variable is the variable set; Setting the setting it is closest to.
	Variable, Setting string
}

// settingLike is a variable name that could be one of ours: upper case, digits
// and underscores.
var settingLike = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

// systemVariables are common variables of shells, systems, CI and tools that are
// never settings, whatever they look like.
var systemVariables = map[string]bool{
	"PATH": true, "HOME": true, "USER": true, "LOGNAME": true, "SHELL": true, "PWD": true, "OLDPWD": true,
	"TERM": true, "LANG": true, "LANGUAGE": true, "TZ": true, "TMPDIR": true, "TEMP": true, "TMP": true,
	"HOSTNAME": true, "HOST": true, "MAIL": true, "SHLVL": true, "EDITOR": true, "VISUAL": true, "PAGER": true,
	"DISPLAY": true, "COLORTERM": true, "CI": true, "HTTP_PROXY": true, "HTTPS_PROXY": true, "NO_PROXY": true,
	"ALL_PROXY": true, "MAKEFLAGS": true, "MAKELEVEL": true, "MFLAGS": true, "CC": true, "CXX": true, "CFLAGS": true,
	"LDFLAGS": true, "CGO_ENABLED": true, "CGO_CFLAGS": true, "CGO_LDFLAGS": true, "PS1": true, "PS2": true,
}

// systemPrefixes start the names of whole families of such variables.
var systemPrefixes = []string{"LC_", "XDG_", "SSH_", "GO", "GIT_", "DBUS_", "DOCKER_", "KUBERNETES_", "GITHUB_", "RUNNER_", "SUDO_", "TERM_"}

// NearMisses returns the variables of environ (KEY=value strings, as
// os.Environ gives) that are not among names but are within a small edit
// distance of one (one edit for names of up to 7 characters, two for longer
// ones; a swap of neighbouring letters is one edit), each with that name. Only
// names that look like settings are considered, and well-known system variables
// are skipped.
func NearMisses(environ []string, names []string) []NearMiss {
	known := map[string]bool{}
	for _, n := range names {
		known[n] = true
	}
	var out []NearMiss
	for _, kv := range environ {
		v, _, _ := strings.Cut(kv, "=")
		if known[v] || !settingLike.MatchString(v) || systemVariables[v] || hasAnyPrefix(v, systemPrefixes) {
			continue
		}
		best, bestDist := "", -1
		for _, n := range names {
			limit := 1
			if len(n) > 7 {
				limit = 2
			}
			if d := editDistance(v, n); d <= limit && (bestDist < 0 || d < bestDist) {
				best, bestDist = n, d
			}
		}
		if best != "" {
			out = append(out, NearMiss{Variable: v, Setting: best})
		}
	}
	slices.SortFunc(out, func(a, b NearMiss) int { return strings.Compare(a.Variable, b.Variable) })
	return out
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// editDistance is the optimal string alignment distance of a and b: insertions,
// deletions, substitutions and swaps of neighbouring characters each cost one.
func editDistance(a, b string) int {
	rows := make([][]int, len(a)+1)
	for i := range rows {
		rows[i] = make([]int, len(b)+1)
		rows[i][0] = i
	}
	for j := range rows[0] {
		rows[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d := min(rows[i-1][j]+1, rows[i][j-1]+1, rows[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d = min(d, rows[i-2][j-2]+1)
			}
			rows[i][j] = d
		}
	}
	return rows[len(a)][len(b)]
}
