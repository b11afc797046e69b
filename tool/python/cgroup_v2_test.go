package python

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The cgroup v2 path writes a documented file protocol (the kernel's
// Documentation/admin-guide/cgroup-v2.rst: memory.max, memory.swap.max,
// memory.oom.group, pids.max, cgroup.procs, cgroup.kill, memory.events).
// Hosts where these tests run are often cgroup v1 or hybrid with no
// controllers on the unified hierarchy, so the real kernel path cannot be
// exercised everywhere; these tests hold the protocol itself against a
// directory laid out as a delegated cgroup_parent looks, so a typo in a
// file name or a value format cannot pass unnoticed. Enforcement by a real
// v2 kernel is covered by TestCgroupRequired where the host delegates
// controllers.

// fakeCgroupParent lays out a directory as a delegated v2 cgroup looks to
// its user: cgroup.subtree_control lists the enabled controllers.
func fakeCgroupParent(t *testing.T, controllers string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(controllers+"\n"), 0o644))
	return dir
}

func readTrim(t *testing.T, path string) string {
	t.Helper()
	// The code writes control files with mode 0 (cgroupfs has them
	// already); on a plain directory that makes a file only root can read.
	require.NoError(t, os.Chmod(path, 0o644))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return strings.TrimSpace(string(b))
}

// The limits land in the v2 files in the kernel's formats; the optional
// files are written where the kernel created them.
func TestCgroupV2WritesLimits(t *testing.T) {
	parent := fakeCgroupParent(t, "cpu memory pids io")
	cg, err := newCgroup(parent, 256<<20, 34)
	require.NoError(t, err)
	require.True(t, cg.v2)
	require.Len(t, cg.dirs, 1)
	d := cg.dirs[0]
	require.Equal(t, parent, filepath.Dir(d))
	require.True(t, strings.HasPrefix(filepath.Base(d), "agentrl-sandbox-"+strconv.Itoa(os.Getpid())+"-"), filepath.Base(d))
	require.Equal(t, strconv.Itoa(256<<20), readTrim(t, filepath.Join(d, "memory.max")))
	require.Equal(t, "34", readTrim(t, filepath.Join(d, "pids.max")))

	// cgroupfs creates the optional files on mkdir where the kernel has
	// them; a plain directory does not, so they are planted here.
	for _, f := range []string{"memory.swap.max", "memory.oom.group"} {
		require.NoError(t, os.WriteFile(filepath.Join(d, f), []byte("max\n"), 0o644))
	}
	require.NoError(t, cg.writeLimits(256<<20, 34))
	require.Equal(t, "0", readTrim(t, filepath.Join(d, "memory.swap.max")))
	require.Equal(t, "1", readTrim(t, filepath.Join(d, "memory.oom.group")))

	require.NoError(t, cg.add(4242))
	require.Equal(t, "4242", readTrim(t, filepath.Join(d, "cgroup.procs")))

	// memory.events as the kernel formats it; oom_kill counts processes the
	// limit killed.
	events := "low 0\nhigh 0\nmax 3\noom 1\noom_kill 0\noom_group_kill 0\n"
	require.NoError(t, os.WriteFile(filepath.Join(d, "memory.events"), []byte(events), 0o644))
	require.False(t, cg.oomKilled(), "oom without a kill is not a kill")
	require.NoError(t, os.WriteFile(filepath.Join(d, "memory.events"), []byte(strings.Replace(events, "oom_kill 0", "oom_kill 2", 1)), 0o644))
	require.True(t, cg.oomKilled())
}

// Optional files (memory.swap.max without swap accounting, memory.oom.group
// before Linux 4.19) are skipped where the kernel did not create them; the
// required ones are not optional.
func TestCgroupV2OptionalFiles(t *testing.T) {
	parent := fakeCgroupParent(t, "memory pids")
	cg, err := newCgroup(parent, 1<<30, 8)
	require.NoError(t, err)
	d := cg.dirs[0]
	require.Equal(t, strconv.Itoa(1<<30), readTrim(t, filepath.Join(d, "memory.max")))
	require.Equal(t, "8", readTrim(t, filepath.Join(d, "pids.max")))
	_, err = os.Stat(filepath.Join(d, "memory.swap.max"))
	require.ErrorIs(t, err, os.ErrNotExist, "an absent optional file must not be created")
	_, err = os.Stat(filepath.Join(d, "memory.oom.group"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

// A cgroup_parent without both controllers delegated is refused, naming
// the parent and what its subtree_control says.
func TestCgroupV2ParentWithoutControllers(t *testing.T) {
	for _, ctl := range []string{"", "memory", "pids", "cpu io", "memoryx pids"} {
		parent := fakeCgroupParent(t, ctl)
		_, err := newCgroup(parent, 1<<30, 8)
		require.Error(t, err, "subtree_control %q", ctl)
		require.ErrorContains(t, err, "cgroup_parent "+parent)
		require.ErrorContains(t, err, "memory and pids controllers are not enabled")
		entries, _ := os.ReadDir(parent)
		require.Len(t, entries, 1, "nothing but subtree_control may be left behind")
	}
}

// A sandbox cgroup left by a process that no longer exists is removed when
// the next one is created; one of a live process (this one's parent) and
// unrelated directories are left alone.
func TestCgroupV2RemovesStale(t *testing.T) {
	parent := fakeCgroupParent(t, "memory pids")
	dead := filepath.Join(parent, "agentrl-sandbox-"+strconv.Itoa(deadPID(t))+"-aaaaaaaaaaaa")
	live := filepath.Join(parent, "agentrl-sandbox-"+strconv.Itoa(os.Getppid())+"-bbbbbbbbbbbb")
	other := filepath.Join(parent, "somebody-else")
	for _, d := range []string{dead, live, other} {
		require.NoError(t, os.Mkdir(d, 0o755))
	}
	_, err := newCgroup(parent, 1<<30, 8)
	require.NoError(t, err)
	_, err = os.Stat(dead)
	require.ErrorIs(t, err, os.ErrNotExist)
	require.DirExists(t, live)
	require.DirExists(t, other)
}

// deadPID returns the pid of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	p, err := os.StartProcess("/bin/true", []string{"true"}, &os.ProcAttr{})
	require.NoError(t, err)
	_, err = p.Wait()
	require.NoError(t, err)
	return p.Pid
}
