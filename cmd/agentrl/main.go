// Command agentrl is the command-line front end of the agentrl library.
//
// Each subcommand lives in its own file and registers itself in init, so the
// commands grow with the packages they expose. `agentrl <command> --help`
// (or `agentrl help <command>`) prints a command's subcommands and flags and
// exits 0.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// command is one subcommand. run gets the arguments after the subcommand
// name and the process's standard streams; its error is printed and turns
// into exit status 1. A run that returns flag.ErrHelp (what a FlagSet's
// Parse returns for -h/--help after printing the usage) exits 0.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error
}

var commands = map[string]command{}

func register(name, summary string, run func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error) {
	if _, dup := commands[name]; dup {
		panic("agentrl: command registered twice: " + name)
	}
	commands[name] = command{summary: summary, run: run}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := runMain(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// runMain is main without the process: tests call it directly.
func runMain(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	if isHelp(args[0]) || args[0] == "help" {
		if args[0] == "help" && len(args) > 1 {
			// `agentrl help model` is `agentrl model --help`.
			return runMain(ctx, []string{args[1], "--help"}, stdin, stdout, stderr)
		}
		usage(stderr) // like the flag package's help, on stderr
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "agentrl: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	if err := c.run(ctx, args[1:], stdin, stdout, stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "agentrl %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

// isHelp reports whether arg asks for help the way the flag package
// understands it.
func isHelp(arg string) bool {
	switch arg {
	case "-h", "-help", "--help", "--h":
		return true
	}
	return false
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: agentrl <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run `agentrl <command> --help` (or `agentrl help <command>`) for its subcommands and flags.")
}

// newFlags returns a FlagSet for a command whose --help prints synopsis
// (the usage lines, then any description) and the flags to w.
func newFlags(name string, w io.Writer, synopsis ...string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() {
		for _, l := range synopsis {
			fmt.Fprintln(w, l)
		}
		fmt.Fprintln(w, "flags:")
		fs.PrintDefaults()
	}
	return fs
}

// subcommand is one verb of a command with subcommands (model, bench).
type subcommand struct {
	name, summary string
	run           func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error
}

// runSubcommands dispatches args[0] among subs. With no subcommand or
// --help it prints every subcommand's usage and flags (by asking each for
// its --help) and returns flag.ErrHelp for --help, an error otherwise.
func runSubcommands(ctx context.Context, cmd string, subs []subcommand, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) > 0 && !isHelp(args[0]) {
		for _, s := range subs {
			if s.name == args[0] {
				return s.run(ctx, args[1:], stdin, stdout, stderr)
			}
		}
		names := make([]string, len(subs))
		for i, s := range subs {
			names[i] = s.name
		}
		return fmt.Errorf("unknown %s subcommand %q (want one of %v)", cmd, args[0], names)
	}
	fmt.Fprintf(stderr, "usage: agentrl %s <subcommand> [flags]\n\nsubcommands:\n", cmd)
	for _, s := range subs {
		fmt.Fprintf(stderr, "  %-8s %s\n", s.name, s.summary)
	}
	for _, s := range subs {
		fmt.Fprintln(stderr)
		if err := s.run(ctx, []string{"--help"}, stdin, stdout, stderr); err != nil && !errors.Is(err, flag.ErrHelp) {
			return err
		}
	}
	if len(args) == 0 {
		return fmt.Errorf("a subcommand is required")
	}
	return flag.ErrHelp
}
