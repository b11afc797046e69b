// Command check verifies the trajectories of a harness run through
// agentrl rollout --harness against the scripted engine's log of what it
// sampled (scripts/harnesses/engine -log): every mask-1 run is exactly an
// engine reply; prompt plus response is the chain's last call's sequence
// (its prompt length plus its reply); and it says how many trajectories
// (segments) the run gave. It prints one line, and exits 1 on a failure.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"

	"github.com/agentrl/agentrl/capture"
	"github.com/agentrl/agentrl/trajectory"
)

type reply struct {
	PromptLen int     `json:"prompt_len"`
	Tokens    []int32 `json:"tokens"`
}

func main() {
	line, err := run()
	if err != nil {
		fmt.Println("FAIL:", err)
		os.Exit(1)
	}
	fmt.Println(line)
}

func run() (string, error) {
	trajPath := flag.String("trajectories", "", "trajectories JSONL")
	logPath := flag.String("engine-log", "", "the engine's reply log")
	flag.String("tokenizer", "", "unused; kept for the script's command line")
	minTrajs := flag.Int("min-trajectories", 1, "fail unless the run gives at least this many trajectories (a forced compaction: 2)")
	flag.Parse()
	f, err := os.Open(*trajPath)
	if err != nil {
		return "", err
	}
	defer f.Close()
	trajs, err := trajectory.ReadJSONL(f)
	if err != nil {
		return "", err
	}
	lf, err := os.Open(*logPath)
	if err != nil {
		return "", err
	}
	defer lf.Close()
	var replies []reply
	sc := bufio.NewScanner(lf)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var r reply
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return "", fmt.Errorf("engine log: %w", err)
		}
		replies = append(replies, r)
	}
	if len(trajs) == 0 {
		return "", errors.New("no trajectories")
	}
	calls, turns := 0, 0
	var rep capture.Report
	for _, t := range trajs {
		if err := t.Validate(); err != nil {
			return "", fmt.Errorf("%s: %w", t.ID, err)
		}
		if raw, ok := t.Extra[capture.ExtraCaptureReport]; ok {
			if err := json.Unmarshal(raw, &rep); err != nil {
				return "", err
			}
		}
		var last *reply
		for i := 0; i < len(t.ResponseMask); {
			if t.ResponseMask[i] == 0 {
				i++
				continue
			}
			j := i
			for j < len(t.ResponseMask) && t.ResponseMask[j] == 1 {
				j++
			}
			idx := slices.IndexFunc(replies, func(r reply) bool { return slices.Equal(r.Tokens, t.ResponseIDs[i:j]) })
			if idx < 0 {
				return "", fmt.Errorf("%s: mask-1 tokens %d..%d are no engine reply", t.ID, i, j)
			}
			last = &replies[idx]
			turns++
			i = j
		}
		if last == nil {
			return "", fmt.Errorf("%s: no mask-1 token", t.ID)
		}
		// The same reply text recurs across runs: the last call is the
		// one whose prompt plus reply is the whole sequence.
		total := len(t.PromptIDs) + len(t.ResponseIDs)
		if !slices.ContainsFunc(replies, func(r reply) bool {
			return slices.Equal(r.Tokens, last.Tokens) && r.PromptLen+len(r.Tokens) == total
		}) {
			return "", fmt.Errorf("%s: prompt+response is %d tokens, no engine call with its last reply had that prompt+reply", t.ID, total)
		}
		calls = rep.Calls
	}
	if len(trajs) < *minTrajs {
		return "", fmt.Errorf("%d trajectories, want at least %d (segment roots: %s)", len(trajs), *minTrajs, reasons(rep.Roots))
	}
	return fmt.Sprintf("ok: %d trajectories (%d segment roots: %s) from %d calls, %d model turns, dropped: %s; mask-1 = engine tokens; prompt+response = last call's sequence; delivered %.2f",
		len(trajs), len(rep.Roots), reasons(rep.Roots), calls, turns, reasons(rep.Dropped), rep.Delivered), nil
}

// reasons lists the reasons of calls, with counts, in first-seen order.
func reasons(ds []capture.Dropped) string {
	if len(ds) == 0 {
		return "none"
	}
	var order []string
	n := map[string]int{}
	for _, d := range ds {
		if n[d.Reason] == 0 {
			order = append(order, d.Reason)
		}
		n[d.Reason]++
	}
	out := ""
	for i, r := range order {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprintf("%d× %s", n[r], r)
	}
	return out
}
