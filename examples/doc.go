// Package examples holds runnable examples of agentrl, each a main package
// in its own directory with a test that runs it:
//
//   - customloop: a custom tool-calling AgentLoop on agentloop.ToolKit,
//     registered under its own agent name, that retries failed calls once
//     with a hint.
//   - remoterouter: a rollout against remote SGLang-compatible servers
//     through the router, one of which fails midway.
//   - usersim: an Interaction that simulates a user.
//
// Each runs from a clone as is (`go run ./examples/customloop`): the
// stand-in model (servertest.Text) speaks Qwen's chat format with the
// small test tokenizer of tokenizer/tokenizertest. --tokenizer DIR (a
// directory with tokenizer.json and tokenizer_config.json, e.g. a Qwen
// model directory) uses another tokenizer in that format.
package examples
