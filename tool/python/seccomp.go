package python

import (
	"bytes"
	"encoding/binary"
	"fmt"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The syscalls the sandboxed code is refused (EPERM), on top of what the
// namespaces and the dropped capabilities already deny. They are the
// kernel's large attack surfaces and the ways out of a sandbox: debugging
// other processes, kernel keyrings, eBPF, perf, mounting, new namespaces,
// userfaultfd (a classic exploit primitive), kernel modules and kexec,
// io_uring (which bypasses syscall filtering), file handles that walk
// outside the mount tree, and host-wide settings.
var deniedSyscalls = []string{
	"ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "pidfd_getfd", "kcmp",
	"keyctl", "add_key", "request_key",
	"bpf", "perf_event_open", "userfaultfd", "fanotify_init", "lookup_dcookie",
	"mount", "umount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree",
	"fsopen", "fsmount", "fsconfig", "fspick", "mount_setattr",
	"unshare", "setns",
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
	"create_module", "query_module", "get_kernel_syms",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	"open_by_handle_at", "name_to_handle_at",
	"swapon", "swapoff", "reboot", "syslog", "acct", "quotactl", "quotactl_fd",
	"vhangup", "uselib", "ustat", "sysfs", "_sysctl", "nfsservctl", "iopl", "ioperm",
	"settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "stime",
	"sethostname", "setdomainname",
	// Mount-tree introspection and mount-creating calls newer than the
	// list above, the LDT (a classic exploit primitive, no use to
	// Python), and secret memory.
	"listmount", "statmount", "open_tree_attr", "modify_ldt", "memfd_secret",
	// Memory that no limit of the sandbox counts: a memfd is a file on
	// no tmpfs of ours, so neither disk_mb nor the address space bounds
	// what is written to it; System V shared memory, message queues and
	// semaphore sets live in the IPC namespace under the host's (huge)
	// default limits. POSIX shared memory (/dev/shm) stays available.
	"memfd_create", "shmget", "msgget", "semget",
}

// cloneNamespaceFlags are clone(2)'s flags that create namespaces
// (CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET, NEWTIME).
const cloneNamespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWTIME

// seccompProgram builds the filter handed to bubblewrap (--seccomp FD): the
// kernel's struct sock_filter array in native byte order.
//
// It is a deny list over an allowed default: the code is arbitrary Python
// (numpy, subprocess, threads), so an allow list would break real
// programs, while the list above removes the kernel surfaces that matter.
// Syscalls of another ABI (i386 or x32 on x86-64) kill the process, since
// the numbers above would not match them.
func seccompProgram() ([]byte, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	var names []string
	for _, n := range deniedSyscalls {
		if _, ok := info.SyscallNames[n]; ok { // not every arch has every call
			names = append(names, n)
		}
	}
	errno := func(e unix.Errno) seccomp.Action { return seccomp.ActionErrno | seccomp.Action(e) }
	policy := seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{
			{Action: errno(unix.EPERM), Names: names},
			// clone3 passes its flags in memory, where a filter cannot
			// look: ENOSYS makes the C library fall back to clone.
			{Action: errno(unix.ENOSYS), Names: []string{"clone3"}},
			{Action: errno(unix.EPERM), NamesWithCondtions: []seccomp.NameWithConditions{{
				Name:       "clone",
				Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.BitsSet, Value: cloneNamespaceFlags}},
			}}},
			// A socket's send buffer bounds what it may queue, kernel
			// memory no process's RSS shows: it stays at the host's
			// default (net.core.wmem_default), since the largest a process
			// may ask for (wmem_max) is often many times that.
			{Action: errno(unix.EPERM), NamesWithCondtions: []seccomp.NameWithConditions{{
				Name: "setsockopt",
				Conditions: seccomp.ArgumentConditions{
					{Argument: 1, Operation: seccomp.Equal, Value: unix.SOL_SOCKET},
					{Argument: 2, Operation: seccomp.Equal, Value: unix.SO_SNDBUF},
				},
			}}},
			// Sockets only of the local and internet families: the network
			// namespace is empty, and families such as netlink, packet,
			// vsock (which crosses namespaces), alg or bluetooth are
			// kernel attack surface with no use here.
			{Action: errno(unix.EAFNOSUPPORT), NamesWithCondtions: []seccomp.NameWithConditions{{
				Name: "socket",
				Conditions: seccomp.ArgumentConditions{
					{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_UNIX},
					{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_INET},
					{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_INET6},
				},
			}}},
		},
	}
	prog, err := policy.Assemble()
	if err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	// The library's program lets a foreign architecture through to the
	// default action (allow); kill it instead.
	guard := []bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(info.ID), SkipTrue: 1},
		bpf.RetConstant{Val: uint32(seccomp.ActionKillProcess)},
	}
	raw, err := bpf.Assemble(append(guard, prog...))
	if err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	var b bytes.Buffer
	for _, ins := range raw {
		// struct sock_filter { __u16 code; __u8 jt; __u8 jf; __u32 k; }
		_ = binary.Write(&b, binary.NativeEndian, struct {
			Op     uint16
			Jt, Jf uint8
			K      uint32
		}{ins.Op, ins.Jt, ins.Jf, ins.K})
	}
	return b.Bytes(), nil
}
