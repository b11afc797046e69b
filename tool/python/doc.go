// Package python is a tool that runs model-written Python code in a
// sandbox.
//
// By default every call runs under bubblewrap (the Debian/Ubuntu package
// "bubblewrap", what Flatpak uses; version 0.8 or later) in new user, PID,
// network, IPC, UTS, mount and cgroup namespaces over a fresh root: /usr
// (and /bin, /lib... as on the host) read-only, a few /etc files Python
// needs, generated /etc/passwd and /etc/group, a /proc of the sandbox's
// own PID namespace only, a minimal /dev, and size-capped private tmpfs
// mounts for the home and working directory, /tmp (also /var/tmp) and
// /dev/shm. No network at all (not even loopback), no host processes, no
// host sockets, an empty environment but for a few fixed variables, all
// capabilities dropped, and a seccomp filter refusing ptrace, kernel
// keyrings, bpf, perf, mounts, new namespaces, userfaultfd, io_uring,
// module loading and socket families other than local and IP. Under root
// the sandbox runs as a host uid of its own, reserved across processes.
//
// Limits: wall time (the whole sandbox is killed and Run returns), CPU
// time, file size and address space per process, and, where a cgroup can
// be created (cgroup v2 with the memory and pids controllers delegated to
// the caller's cgroup, or the v1 hierarchies under root), memory and
// process count for the whole sandbox together. Where no cgroup can be
// created the process count still covers the whole sandbox (the kernel
// counts it per user namespace) but memory is limited per process only
// (address space, open files, and with them socket buffers), with the
// root and /dev read-only and the tmpfs mounts capped in size and inodes:
// SECURITY.md states the bound this gives, per mode; cgroup "auto" warns
// once when it falls back, cgroup: required refuses to run instead. Every
// sandbox process has oom_score_adj 1000. Nothing survives a call: no
// process, no file.
//
// Fail closed: where the sandbox cannot be set up (bubblewrap missing,
// user namespaces or seccomp refused, as under Docker's default seccomp
// profile) New or Run fails with an error wrapping ErrNoIsolation that
// says what is missing. The weaker mode, isolation: rlimits_only, runs the
// code as a plain child process with rlimits and must be asked for by
// name. SECURITY.md at the repository root has the threat model.
//
// Which isolation was in effect is reported in the result's metrics
// (sandboxed, cgroup_limits, dedicated_uid, memory_limit).
//
// Importing the package registers the "python" tool class for tool
// config files:
//
//	tools:
//	  - class_name: python
//	    config: {type: native, wall_timeout: 10, memory_mb: 512, max_processes: 32}
//
// or in Go:
//
//	t, _ := python.New(python.Config{})
//	set, _ := tool.NewSet(t)
package python
