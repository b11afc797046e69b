package python

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Under root, each sandbox runs as a host uid (and gid) of its own: never
// root (which the kernel exempts from the process limit, and which a
// process that got out of its namespaces would be), and never shared with
// a sandbox of another call or another process.
//
// Ids are drawn at random from [2^30, 2^31), skipping every id in use on
// the machine (user-namespaced containers take ranges there: systemd's
// container range reaches 2^31 - 2^28), and reserved with an flock on a
// file named after the id in a directory shared by every process on the
// machine, whatever its TMPDIR; the kernel drops the lock when its holder
// dies, and the files a crashed process left are removed by the next
// process that reserves.
const (
	hostIDBase  = 1 << 30
	hostIDRange = 1 << 30
)

// hostIDLockDir is where the reservations live: under /run (a tmpfs,
// emptied at boot) where there is one, else under /tmp; never under
// $TMPDIR, which differs between processes. A variable for tests.
var hostIDLockDir = func() string {
	if fi, err := os.Stat("/run"); err == nil && fi.IsDir() {
		return "/run/agentrl-sandbox-ids"
	}
	return "/tmp/agentrl-sandbox-ids"
}()

// hostID is one reserved id.
type hostID struct {
	id   int
	lock *os.File
}

// sweepOnce removes, once per process, the reservation files that no
// process holds (left by processes that crashed).
var sweepOnce sync.Once

// reserveHostID reserves an unused id, or returns nil (no error) where
// the id range is not mapped in this user namespace (root inside a
// container with a small uid map): the sandbox then keeps the caller's
// uid, and its user namespace still separates it.
func reserveHostID() (*hostID, error) {
	if !idRangeMapped("/proc/self/uid_map") || !idRangeMapped("/proc/self/gid_map") {
		return nil, nil
	}
	dir := hostIDLockDir
	if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
		return nil, fmt.Errorf("sandbox uid reservations: %w", err)
	}
	// The directory may be in a world-writable place: refuse one that
	// another user made (or a link to elsewhere), where we would create
	// and remove files.
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return nil, fmt.Errorf("sandbox uid reservations: %w", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || int(st.Uid) != os.Geteuid() || st.Mode&0o022 != 0 {
		return nil, fmt.Errorf("sandbox uid reservations: %s is not a directory of ours that only we can write (mode %o, owner %d)", dir, st.Mode, st.Uid)
	}
	sweepOnce.Do(func() { sweepStale(dir) })
	used := idsInUse()
	for try := 0; try < 100; try++ {
		id := hostIDBase + randID()
		if used.has(id) {
			continue
		}
		path := filepath.Join(dir, strconv.Itoa(id))
		f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			return nil, fmt.Errorf("sandbox uid reservations: %w", err)
		}
		if !lockIfCurrent(f, path) {
			continue // held by another call
		}
		return &hostID{id: id, lock: f}, nil
	}
	return nil, fmt.Errorf("sandbox uid reservations: no free id after 100 tries")
}

// randID draws an offset into the id range; a variable for tests.
var randID = func() int { return rand.IntN(hostIDRange) }

// lockIfCurrent takes the exclusive lock on f, opened at path, and checks
// that path still names f: the previous holder may have removed the file
// between our open and our lock, and then we would hold a lock on a file
// no one else sees. On failure f is closed.
func lockIfCurrent(f *os.File, path string) bool {
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return false
	}
	var held, named unix.Stat_t
	if unix.Fstat(int(f.Fd()), &held) != nil || unix.Stat(path, &named) != nil || held.Ino != named.Ino || held.Dev != named.Dev {
		f.Close()
		return false
	}
	return true
}

// sweepStale removes the reservation files in dir whose lock no process
// holds: their holder died without releasing them.
func sweepStale(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil || !e.Type().IsRegular() {
			continue
		}
		path := filepath.Join(dir, e.Name())
		f, err := os.OpenFile(path, os.O_RDWR|unix.O_NOFOLLOW, 0)
		if err != nil {
			continue
		}
		if lockIfCurrent(f, path) {
			_ = os.Remove(path) // while holding the lock, as release does
			f.Close()
		}
	}
}

// idRanges are half-open ranges [lo, hi) of ids.
type idRanges [][2]int64

func (r idRanges) has(id int) bool {
	for _, x := range r {
		if int64(id) >= x[0] && int64(id) < x[1] {
			return true
		}
	}
	return false
}

// Where ids in use are found; variables for tests.
var (
	accountFiles = []string{"/etc/passwd", "/etc/group"}  // name:x:id:...
	subIDFiles   = []string{"/etc/subuid", "/etc/subgid"} // name:start:count
	procDir      = "/proc"
)

// idsInUse collects the uids and gids in use on the machine: those of
// accounts, the subordinate ranges given to users for their containers,
// the ids of running processes, and the ranges that user namespaces of
// running processes map (containers without an entry in /etc/subuid).
func idsInUse() idRanges {
	var r idRanges
	add := func(lo, n int64) {
		if n > 0 && lo >= 0 {
			r = append(r, [2]int64{lo, lo + n})
		}
	}
	for _, file := range accountFiles {
		b, _ := os.ReadFile(file)
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Split(line, ":"); len(f) >= 3 {
				if id, err := strconv.ParseInt(f[2], 10, 64); err == nil {
					add(id, 1)
				}
			}
		}
	}
	for _, file := range subIDFiles {
		b, _ := os.ReadFile(file)
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Split(strings.TrimSpace(line), ":"); len(f) == 3 {
				lo, err1 := strconv.ParseInt(f[1], 10, 64)
				n, err2 := strconv.ParseInt(f[2], 10, 64)
				if err1 == nil && err2 == nil {
					add(lo, n)
				}
			}
		}
	}
	entries, _ := os.ReadDir(procDir)
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		p := filepath.Join(procDir, e.Name())
		if b, err := os.ReadFile(filepath.Join(p, "status")); err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
					for _, f := range strings.Fields(rest) {
						if id, err := strconv.ParseInt(f, 10, 64); err == nil {
							add(id, 1)
						}
					}
				} else if rest, ok := strings.CutPrefix(line, "Gid:"); ok {
					for _, f := range strings.Fields(rest) {
						if id, err := strconv.ParseInt(f, 10, 64); err == nil {
							add(id, 1)
						}
					}
				}
			}
		}
		for _, m := range []string{"uid_map", "gid_map"} {
			b, err := os.ReadFile(filepath.Join(p, m))
			if err != nil {
				continue
			}
			for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				f := strings.Fields(line)
				if len(f) != 3 {
					continue
				}
				in, err1 := strconv.ParseInt(f[0], 10, 64)
				out, err2 := strconv.ParseInt(f[1], 10, 64)
				n, err3 := strconv.ParseInt(f[2], 10, 64)
				if err1 != nil || err2 != nil || err3 != nil || (in == 0 && out == 0 && n >= 1<<32-1) {
					continue // the identity map of our own namespace
				}
				add(out, n)
			}
		}
	}
	return r
}

func (h *hostID) release() {
	if h == nil {
		return
	}
	// Remove while holding the lock; see the inode check above.
	_ = os.Remove(h.lock.Name())
	h.lock.Close()
}

// idRangeMapped says whether the whole id range is mapped in this user
// namespace (an id_map file: "inside outside count" lines).
func idRangeMapped(file string) bool {
	b, err := os.ReadFile(file)
	if err != nil {
		return false
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		in, err1 := strconv.ParseInt(f[0], 10, 64)
		n, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 == nil && err2 == nil && in <= hostIDBase && in+n >= hostIDBase+hostIDRange {
			return true
		}
	}
	return false
}
