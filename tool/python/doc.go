// Package python is a tool that runs model-written Python code in a
// sandboxed subprocess.
//
// Each call gets a fresh temporary directory (the working directory and
// HOME) and a process tree with limits on wall time, CPU time, address
// space, file size, process count and output size. Where the kernel allows
// it the process runs in new user, network and PID namespaces: no network
// at all (not even loopback), a dedicated unprivileged uid when the host
// process is root, and every process of the sandbox killed when it ends.
// Which isolation was in effect is reported in the result's metrics
// (network_isolated, pid_namespace, dedicated_uid), so a run on a machine
// that cannot isolate is visible rather than silently weaker.
//
// What it does not do: there is no mount namespace, so the code sees the
// host's files with the permissions of its uid (a dedicated unprivileged
// uid under root: it can read world-readable files and write only
// world-writable places such as /tmp, which RLIMIT_FSIZE bounds per file but
// not in total). Without root, the process limit is not applied (RLIMIT_NPROC
// counts every process of the user) and the code runs as the calling user.
//
// Importing the package registers the "python" tool class for tool
// config files:
//
//	tools:
//	  - class_name: python
//	    config: {type: native, wall_timeout: 10, memory_mb: 512}
//
// or in Go:
//
//	t, _ := python.New(python.Config{})
//	set, _ := tool.NewSet(t)
package python
