// Command engine is the scripted model the harness script
// (scripts/harnesses/run.sh) runs real agent harnesses against: it serves
// server/httpapi (Chat Completions, Responses, Messages, and SGLang's
// native /generate for agentrl rollout --servers) over server/servertest,
// on loopback only. It is a test program, not shipped in the agentrl CLI.
//
// Its "model" reads the prompt it is given, as a model would: on a turn
// that follows a user message it calls the harness's own shell tool (the
// first tool in the prompt's <tools> block named like one: shell, bash,
// Bash, exec_command, local_shell, ...) with `echo agentrl-ok`, its
// arguments shaped by that tool's schema; on a turn that follows a tool
// response it answers with a final message quoting that response. A
// prompt with no shell tool gets a plain answer. Every reply is a Hermes
// tool call or text in the Qwen3 format, ended by <|im_end|>.
//
// With -log, every reply is appended to a JSONL file ({"prompt_len",
// "tokens", "text"}) so the script can check trajectories against what
// the engine sampled.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/tokenizer"
)

// shellTools are the names harnesses give their shell tool, in the order
// preferred when a harness offers several.
var shellTools = []string{"shell", "bash", "Bash", "exec_command", "local_shell", "run_shell_command", "execute_command", "terminal", "exec"}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "engine:", err)
		os.Exit(1)
	}
}

func run() error {
	addr := flag.String("addr", "127.0.0.1:0", "loopback listen address")
	tokDir := flag.String("tokenizer", "", "Qwen3-format tokenizer directory (required)")
	logPath := flag.String("log", "", "append every reply to this JSONL file")
	addrFile := flag.String("addr-file", "", "write the bound address here once listening")
	flag.Parse()
	if *tokDir == "" {
		return errors.New("-tokenizer is required")
	}
	host, _, err := net.SplitHostPort(*addr)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("-addr %s: loopback only", *addr)
	}
	tok, err := tokenizer.Load(*tokDir)
	if err != nil {
		return err
	}
	m := &model{tok: tok}
	if m.end, err = special(tok, "<|im_end|>"); err != nil {
		return err
	}
	if *logPath != "" {
		if m.log, err = os.OpenFile(*logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
			return err
		}
		defer m.log.Close()
	}
	srv, err := httpapi.Start(servertest.New(servertest.Config{Rule: m.rule}),
		httpapi.Config{Addr: *addr, Chat: &httpapi.Chat{Tokenizer: tok, ToolParser: "hermes"}})
	if err != nil {
		return err
	}
	if *addrFile != "" {
		if err := os.WriteFile(*addrFile, []byte(strings.TrimPrefix(srv.URL(), "http://")), 0o644); err != nil {
			return err
		}
	}
	fmt.Fprintln(os.Stderr, "engine: serving on", srv.URL())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	return srv.Shutdown(context.Background())
}

func special(tok *tokenizer.Tokenizer, s string) (int32, error) {
	id, ok := tok.TokenID(s)
	if !ok {
		return 0, fmt.Errorf("the tokenizer has no %s: a Qwen3-format tokenizer is needed", s)
	}
	return id, nil
}

type model struct {
	tok *tokenizer.Tokenizer
	end int32
	mu  sync.Mutex
	log *os.File
}

func (m *model) rule(c servertest.Call) servertest.Reply {
	prompt, err := m.tok.Decode(c.Req.PromptIDs, false)
	text := "I could not read my prompt."
	if err == nil {
		text = reply(prompt)
	}
	ids := append(m.tok.Encode(text), m.end)
	if m.log != nil {
		line, _ := json.Marshal(map[string]any{"prompt_len": len(c.Req.PromptIDs), "tokens": ids, "text": text})
		m.mu.Lock()
		_, _ = m.log.Write(append(line, '\n'))
		m.mu.Unlock()
	}
	return servertest.Reply{Tokens: ids}
}

// reply is the scripted model's answer to a rendered Qwen3 prompt.
func reply(prompt string) string {
	lastUser := strings.LastIndex(prompt, "<|im_start|>user\n")
	lastResp := strings.LastIndex(prompt, "<tool_response>\n")
	if lastResp > lastUser && lastUser >= 0 {
		out := prompt[lastResp+len("<tool_response>\n"):]
		if i := strings.Index(out, "\n</tool_response>"); i >= 0 {
			out = out[:i]
		}
		return "The command printed: " + strings.TrimSpace(out)
	}
	// Qwen3's template puts a tool response in a user turn: a user turn
	// that is only tool responses is not the user's.
	name, args, ok := shellCall(prompt)
	if !ok {
		return "Hello from the scripted engine: no shell tool was offered."
	}
	call, _ := json.Marshal(map[string]any{"name": name, "arguments": args})
	return "<tool_call>\n" + string(call) + "\n</tool_call>"
}

// toolDef is a line of the Qwen3 template's <tools> block.
type toolDef struct {
	Name       string         `json:"name"`
	Parameters map[string]any `json:"parameters"`
	Function   *toolDef       `json:"function"`
}

// shellCall finds the harness's shell tool in the prompt and the
// arguments that make it run `echo agentrl-ok`.
func shellCall(prompt string) (string, map[string]any, bool) {
	start := strings.Index(prompt, "<tools>\n")
	end := strings.Index(prompt, "\n</tools>")
	if start < 0 || end < start {
		return "", nil, false
	}
	defs := map[string]toolDef{}
	for line := range strings.SplitSeq(prompt[start+len("<tools>\n"):end], "\n") {
		var d toolDef
		if json.Unmarshal([]byte(line), &d) != nil {
			continue
		}
		if d.Function != nil {
			d = *d.Function
		}
		defs[d.Name] = d
	}
	for _, name := range shellTools {
		if d, ok := defs[name]; ok {
			return name, shellArgs(d.Parameters), true
		}
	}
	return "", nil, false
}

// shellArgs fills the tool's schema: the command as a string or as an
// argv list under whichever of command/cmd it has, and any other
// required string field with a short description.
func shellArgs(schema map[string]any) map[string]any {
	props, _ := schema["properties"].(map[string]any)
	args := map[string]any{}
	const cmd = "echo agentrl-ok"
	key := "command"
	if _, ok := props["command"]; !ok {
		for _, k := range []string{"cmd", "script", "input"} {
			if _, ok := props[k]; ok {
				key = k
				break
			}
		}
	}
	if p, _ := props[key].(map[string]any); p != nil && p["type"] == "array" {
		args[key] = []string{"bash", "-lc", cmd}
	} else {
		args[key] = cmd
	}
	req, _ := schema["required"].([]any)
	for _, r := range req {
		k, _ := r.(string)
		if _, done := args[k]; done || k == "" {
			continue
		}
		p, _ := props[k].(map[string]any)
		switch p["type"] {
		case "string":
			args[k] = "Print a marker"
		case "number", "integer":
			args[k] = 10000
		case "boolean":
			args[k] = false
		}
	}
	return args
}
