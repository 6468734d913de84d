package openapi

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestContractVersioningIsEnforced runs scripts/check-contract.sh (what `make
// check-contract` runs in CI) on copies of the contracts with changes planted in
// them: it passes on the tree as committed and fails on a change without a version
// bump, on a breaking change under the same major version (a new value in a
// response enum), and on a released contract edited afterwards, by a commit or by
// a merge's own resolution; a new major version lets the breaking change through.
func TestContractVersioningIsEnforced(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	bin := filepath.Join(t.TempDir(), "oasdiff")
	build := exec.Command("go", "build", "-modfile=openapi/tools.mod", "-o", bin, "github.com/oasdiff/oasdiff")
	build.Dir = root
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	// tree copies the contracts, the changelog and the released files.
	tree := func(t *testing.T) string {
		dir := t.TempDir()
		require.NoError(t, os.CopyFS(filepath.Join(dir, "openapi"), os.DirFS(filepath.Join(root, "openapi"))))
		return dir
	}
	check := func(t *testing.T, dir string, args ...string) (string, bool) {
		cmd := exec.Command(filepath.Join(root, "scripts", "check-contract.sh"), args...)
		cmd.Env = append(os.Environ(), "CONTRACT_ROOT="+dir, "OASDIFF="+bin, "GIT_DIR="+filepath.Join(dir, "no-git"))
		out, err := cmd.CombinedOutput()
		return string(out), err == nil
	}
	edit := func(t *testing.T, path, old, new string) {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Contains(t, string(b), old)
		require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(b), old, new, 1)), 0o644))
	}
	version := func(t *testing.T, dir, from, to string) {
		edit(t, filepath.Join(dir, "openapi", "partner.yaml"), "\n  version: "+from+"\n", "\n  version: "+to+"\n")
		f, err := os.OpenFile(filepath.Join(dir, "openapi", "CHANGELOG.md"), os.O_APPEND|os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = f.WriteString("\n## partner " + to + "\n")
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
	current := func(t *testing.T, dir string) string {
		b, err := os.ReadFile(filepath.Join(dir, "openapi", "partner.yaml"))
		require.NoError(t, err)
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "  version: "); ok {
				return v
			}
		}
		t.Fatal("no info.version")
		return ""
	}
	// A response enum gains a value: a client with closed enums cannot decode it.
	const enumBefore = "enum: [partial, confirming, confirmed, underpaid, failed, refunded, null]"
	const enumAfter = "enum: [partial, confirming, confirmed, underpaid, failed, refunded, reversed, null]"

	t.Run("as committed", func(t *testing.T) {
		out, ok := check(t, tree(t))
		require.True(t, ok, out)
	})
	t.Run("a change without a version bump", func(t *testing.T) {
		dir := tree(t)
		edit(t, filepath.Join(dir, "openapi", "partner.yaml"), "Confirmations seen;", "Confirmations seen so far;")
		out, ok := check(t, dir)
		require.False(t, ok)
		require.Contains(t, out, "changed without a version bump")
	})
	t.Run("a breaking change in a minor version", func(t *testing.T) {
		dir := tree(t)
		v := current(t, dir)
		edit(t, filepath.Join(dir, "openapi", "partner.yaml"), enumBefore, enumAfter)
		next := strings.Split(v, ".")
		next[1] += "9"
		version(t, dir, v, strings.Join(next, "."))
		out, ok := check(t, dir, "release")
		require.True(t, ok, out)
		out, ok = check(t, dir)
		require.False(t, ok)
		require.Contains(t, out, "response-property-enum-value-added")
		require.Contains(t, out, "without a new major version")
	})
	t.Run("the same change in a new major version", func(t *testing.T) {
		dir := tree(t)
		v := current(t, dir)
		edit(t, filepath.Join(dir, "openapi", "partner.yaml"), enumBefore, enumAfter)
		version(t, dir, v, "99.0.0")
		out, ok := check(t, dir, "release")
		require.True(t, ok, out)
		out, ok = check(t, dir)
		require.True(t, ok, out)
	})
	t.Run("a release rewritten by a merge", func(t *testing.T) {
		dir := tree(t)
		git := func(args ...string) {
			t.Helper()
			cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"}, args...)...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null")
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "git %s: %s", strings.Join(args, " "), out)
		}
		git("init", "-q", "-b", "main")
		git("add", ".")
		git("commit", "-q", "-m", "releases")
		git("checkout", "-q", "-b", "side")
		edit(t, filepath.Join(dir, "openapi", "CHANGELOG.md"), "# API changelog", "# API changelog (side)")
		git("commit", "-q", "-am", "side")
		git("checkout", "-q", "main")
		run := func() (string, bool) {
			cmd := exec.Command(filepath.Join(root, "scripts", "check-contract.sh"))
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "CONTRACT_ROOT="+dir, "OASDIFF="+bin, "GIT_CONFIG_GLOBAL=/dev/null")
			out, err := cmd.CombinedOutput()
			return string(out), err == nil
		}
		out, ok := run()
		require.True(t, ok, out)
		// The merge's own resolution edits the release: no single commit does.
		git("merge", "-q", "--no-ff", "--no-commit", "side")
		released := filepath.Join("openapi", "released", "partner-v"+current(t, dir)+".yaml")
		edit(t, filepath.Join(dir, released), "Confirmations seen;", "Confirmations seen so far;")
		edit(t, filepath.Join(dir, "openapi", "partner.yaml"), "Confirmations seen;", "Confirmations seen so far;")
		git("commit", "-q", "-am", "merge side")
		out, ok = run()
		require.False(t, ok, out)
		require.Contains(t, out, "released contracts are never edited")
		require.Contains(t, out, released)
	})
	t.Run("a released contract edited", func(t *testing.T) {
		dir := tree(t)
		edit(t, filepath.Join(dir, "openapi", "released", "partner-v"+current(t, dir)+".yaml"), "Confirmations seen;", "Confirmations seen so far;")
		out, ok := check(t, dir)
		require.False(t, ok)
		require.Contains(t, out, "changed without a version bump")
	})
}
