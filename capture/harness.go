package capture

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/agentrl/agentrl/trajectory"
)

// Harness runs an agent harness command for a rollout: Claude Code, codex,
// opencode, a script around an SDK. The command gets its rollout's endpoint
// in the environment variables harnesses and SDKs read.
type Harness struct {
	// Command runs under "sh -c"; "{prompt}" in it is replaced by the
	// prompt, shell-quoted.
	Command string
	// Dir is where each run's own working directory is made (default
	// os.TempDir()); KeepDirs keeps them after the run.
	Dir      string
	KeepDirs bool
	// Env is added to the process's environment.
	Env []string
	// Timeout bounds a run (0: none but ctx's); the whole process group
	// is killed when it passes.
	Timeout time.Duration
	// Stdout and Stderr receive the command's output (nil: discarded).
	Stdout, Stderr io.Writer
}

// Run runs the command once for ro with prompt, in a fresh working
// directory, with OPENAI_BASE_URL, OPENAI_API_KEY, ANTHROPIC_BASE_URL,
// ANTHROPIC_API_KEY, AGENTRL_PROMPT and AGENTRL_ROLLOUT_ID set. It returns
// the command's error (a non-zero exit, a timeout).
func (h Harness) Run(ctx context.Context, ro Rollout, prompt string) error {
	if strings.TrimSpace(h.Command) == "" {
		return errors.New("capture: Harness.Command is empty")
	}
	if h.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, h.Timeout)
		defer cancel()
	}
	dir, err := os.MkdirTemp(h.Dir, "harness-"+ro.ID+"-")
	if err != nil {
		return fmt.Errorf("capture: harness working directory: %w", err)
	}
	if !h.KeepDirs {
		defer os.RemoveAll(dir)
	}
	cmd := exec.CommandContext(ctx, "sh", "-c", strings.ReplaceAll(h.Command, "{prompt}", shellQuote(prompt)))
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), h.Env...),
		"OPENAI_BASE_URL="+ro.OpenAIBaseURL, "OPENAI_API_KEY="+ro.Key,
		"ANTHROPIC_BASE_URL="+ro.AnthropicBaseURL, "ANTHROPIC_API_KEY="+ro.Key,
		"AGENTRL_PROMPT="+prompt, "AGENTRL_ROLLOUT_ID="+ro.ID)
	cmd.Stdout, cmd.Stderr = h.Stdout, h.Stderr
	// A harness starts its own children (tools, shells): a timeout
	// ends them all.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("capture: harness for %s: %w (%v)", ro.ID, ctx.Err(), err)
		}
		return fmt.Errorf("capture: harness for %s: %w", ro.ID, err)
	}
	return nil
}

// shellQuote quotes s for sh: in single quotes, each quote inside closed, escaped with a backslash and reopened.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// RunRollout is one rollout of a harness: create it, run the harness,
// finish it and rebuild its trajectories. A harness that failed still
// has its rollout rebuilt (its recorded calls are real); its error is
// returned with them, and the caller decides whether to train on them.
func (c *Capture) RunRollout(ctx context.Context, h Harness, prompt string, opts CreateOptions) ([]*trajectory.Trajectory, Report, error) {
	ro, err := c.Create(ctx, opts)
	if err != nil {
		return nil, Report{}, err
	}
	runErr := h.Run(ctx, ro, prompt)
	if err := c.Finish(ctx, ro.ID); err != nil {
		return nil, Report{Rollout: ro.ID}, errors.Join(runErr, err)
	}
	trajs, rep, err := c.Rebuild(ctx, ro.ID, RebuildOptions{})
	return trajs, rep, errors.Join(runErr, err)
}
