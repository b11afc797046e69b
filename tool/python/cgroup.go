package python

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A cgroup of one sandbox: memory and process limits for all of its
// processes together (rlimits are per process), the means to kill every one
// of them, and a record of whether the memory limit killed something.
//
// cgroup v2 is used where the caller's own cgroup has the memory and pids
// controllers enabled for its children (a delegated subtree, as systemd
// gives with Delegate=yes); otherwise the v1 memory and pids hierarchies
// where they are mounted and writable (root on a v1 or hybrid host).
type cgroup struct {
	v2   bool
	dirs []string // v2: one; v1: the memory and the pids cgroup
}

// cgroupMount finds where the cgroup hierarchies are mounted and the
// caller's own cgroup in each: v2 under "", v1 under each controller name.
type cgroupPlace struct{ mount, own string }

func cgroupPlaces() (map[string]cgroupPlace, error) {
	mounts := map[string]string{}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(string(mi), "\n") {
		// id parent maj:min root mountpoint opts [optional...] - fstype source superopts
		left, right, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		lf, rf := strings.Fields(left), strings.Fields(right)
		if len(lf) < 5 || len(rf) < 3 {
			continue
		}
		switch rf[0] {
		case "cgroup2":
			if _, seen := mounts[""]; !seen {
				mounts[""] = lf[4]
			}
		case "cgroup":
			for _, opt := range strings.Split(rf[2], ",") {
				if opt == "memory" || opt == "pids" {
					if _, seen := mounts[opt]; !seen {
						mounts[opt] = lf[4]
					}
				}
			}
		}
	}
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	places := map[string]cgroupPlace{}
	for _, line := range strings.Split(strings.TrimSpace(string(own)), "\n") {
		// hierarchy-id:controller-list:path
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		if f[0] == "0" && f[1] == "" {
			if m, ok := mounts[""]; ok {
				places[""] = cgroupPlace{m, f[2]}
			}
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			if m, ok := mounts[c]; ok {
				places[c] = cgroupPlace{m, f[2]}
			}
		}
	}
	return places, nil
}

// newCgroup creates a cgroup for one sandbox and sets its limits, or says
// why it cannot. The cgroup is a child of parent (a cgroup v2 directory)
// where one is given, else of the caller's own cgroup.
func newCgroup(parent string, memBytes int64, pids int) (*cgroup, error) {
	var suffix [6]byte
	_, _ = rand.Read(suffix[:])
	name := fmt.Sprintf("agentrl-sandbox-%d-%s", os.Getpid(), hex.EncodeToString(suffix[:]))
	if parent != "" {
		ctl, err := os.ReadFile(filepath.Join(parent, "cgroup.subtree_control"))
		if err != nil {
			return nil, fmt.Errorf("cgroup_parent: %w", err)
		}
		if !hasWords(string(ctl), "memory", "pids") {
			return nil, fmt.Errorf("cgroup_parent %s: the memory and pids controllers are not enabled for its children (cgroup.subtree_control: %q)", parent, strings.TrimSpace(string(ctl)))
		}
		cg := &cgroup{v2: true, dirs: []string{filepath.Join(parent, name)}}
		if err := cg.create(memBytes, pids); err != nil {
			return nil, fmt.Errorf("cgroup_parent: %w", err)
		}
		return cg, nil
	}
	places, err := cgroupPlaces()
	if err != nil {
		return nil, err
	}
	var why []string
	if p, ok := places[""]; ok {
		parent := filepath.Join(p.mount, p.own)
		ctl, err := os.ReadFile(filepath.Join(parent, "cgroup.subtree_control"))
		switch {
		case err != nil:
			why = append(why, "v2: "+err.Error())
		case !hasWords(string(ctl), "memory", "pids"):
			why = append(why, fmt.Sprintf("v2: the memory and pids controllers are not enabled for the children of %s (cgroup.subtree_control: %q)", parent, strings.TrimSpace(string(ctl))))
		default:
			cg := &cgroup{v2: true, dirs: []string{filepath.Join(parent, name)}}
			if err := cg.create(memBytes, pids); err == nil {
				return cg, nil
			} else {
				why = append(why, "v2: "+err.Error())
			}
		}
	}
	mem, okm := places["memory"]
	pid, okp := places["pids"]
	if okm && okp {
		cg := &cgroup{dirs: []string{filepath.Join(mem.mount, mem.own, name), filepath.Join(pid.mount, pid.own, name)}}
		if err := cg.create(memBytes, pids); err == nil {
			return cg, nil
		} else {
			why = append(why, "v1: "+err.Error())
		}
	} else if len(why) == 0 {
		why = append(why, "no cgroup v2 with delegated controllers and no v1 memory and pids hierarchies")
	}
	return nil, errors.New(strings.Join(why, "; "))
}

func hasWords(s string, words ...string) bool {
	have := strings.Fields(s)
	for _, w := range words {
		found := false
		for _, h := range have {
			found = found || h == w
		}
		if !found {
			return false
		}
	}
	return true
}

func (cg *cgroup) create(memBytes int64, pids int) error {
	for _, d := range cg.dirs {
		removeStale(filepath.Dir(d))
	}
	for i, d := range cg.dirs {
		if err := os.Mkdir(d, 0o755); err != nil {
			cg.dirs = cg.dirs[:i]
			cg.remove()
			return err
		}
	}
	if err := cg.writeLimits(memBytes, pids); err != nil {
		cg.remove()
		return err
	}
	return nil
}

// writeLimits writes the limits into the cgroup's control files. Optional
// files (swap accounting, oom.group) are written only where the kernel
// created them.
func (cg *cgroup) writeLimits(memBytes int64, pids int) error {
	mem, np := strconv.FormatInt(memBytes, 10), strconv.Itoa(pids)
	var writes [][2]string // file, value; "?" prefix: only where the file exists
	if cg.v2 {
		d := cg.dirs[0]
		writes = [][2]string{
			{filepath.Join(d, "memory.max"), mem},
			{"?" + filepath.Join(d, "memory.swap.max"), "0"},
			// One process over the limit takes the whole sandbox with it,
			// rather than leaving a half-killed program running.
			{"?" + filepath.Join(d, "memory.oom.group"), "1"},
			{filepath.Join(d, "pids.max"), np},
		}
	} else {
		m, p := cg.dirs[0], cg.dirs[1]
		writes = [][2]string{
			{filepath.Join(m, "memory.limit_in_bytes"), mem},
			{"?" + filepath.Join(m, "memory.memsw.limit_in_bytes"), mem},
			{"?" + filepath.Join(m, "memory.swappiness"), "0"},
			{filepath.Join(p, "pids.max"), np},
		}
	}
	for _, w := range writes {
		file, optional := strings.CutPrefix(w[0], "?")
		if optional {
			if _, err := os.Stat(file); err != nil {
				continue
			}
		}
		if err := os.WriteFile(file, []byte(w[1]), 0); err != nil && !optional {
			return err
		}
	}
	return nil
}

// removeStale removes the sandbox cgroups that a process which no longer
// exists left behind in parent (it was killed before it could remove
// them; their processes died with it). A cgroup that still has processes
// cannot be removed, so a live one is never harmed.
func removeStale(parent string) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), "agentrl-sandbox-")
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			_ = os.Remove(filepath.Join(parent, e.Name()))
		}
	}
}

// add moves the process pid (not yet running the sandbox) into the cgroup.
func (cg *cgroup) add(pid int) error {
	for _, d := range cg.dirs {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			return fmt.Errorf("adding the sandbox to cgroup %s: %w", d, err)
		}
	}
	return nil
}

// killAll kills every process in the cgroup and waits (boundedly) until it
// is empty.
func (cg *cgroup) killAll() {
	if cg.v2 {
		// cgroup.kill (Linux 5.14) kills atomically, forks included.
		_ = os.WriteFile(filepath.Join(cg.dirs[0], "cgroup.kill"), []byte("1"), 0)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := 0
		for _, d := range cg.dirs {
			for _, pid := range cg.procs(d) {
				left++
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if left == 0 || time.Now().After(deadline) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (cg *cgroup) procs(dir string) []int {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var out []int
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if pid, err := strconv.Atoi(strings.TrimSpace(sc.Text())); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// oomKilled says whether the memory limit killed a process.
func (cg *cgroup) oomKilled() bool {
	file, key := filepath.Join(cg.dirs[0], "memory.events"), "oom_kill"
	if !cg.v2 {
		file = filepath.Join(cg.dirs[0], "memory.oom_control")
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == key && f[1] != "0" {
			return true
		}
	}
	return false
}

// remove deletes the cgroup directories; a cgroup with processes left
// cannot be removed, so killAll comes first.
func (cg *cgroup) remove() {
	for _, d := range cg.dirs {
		for i := 0; i < 100; i++ {
			if err := os.Remove(d); err == nil || os.IsNotExist(err) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}
