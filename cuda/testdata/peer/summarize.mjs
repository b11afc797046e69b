// Summarizes the per-run logs that run_shapes.sh writes into one markdown
// table for BENCHMARKS.md (and SHAPE-DTYPE-STAMP-interleaved.log, the
// interleaved batch-1 decode, a row of its own: the median of the per-round
// ratios of all such logs):
//   node cuda/testdata/peer/summarize.mjs LOG_DIR [LOG_DIR...]
// Every SHAPE-DTYPE-STAMP-rN-{agentrl,llamacpp}.log in the directories
// counts as one round of that shape and dtype (rounds of several
// invocations are pooled). For each shape and dtype it prints the median over
// rounds (the mean of the middle two for an even count) of each side's
// numbers — model load, peak RSS, 512-token prefill, batch-1 decode and
// aggregate decode of 32 sequences, each itself a median over reps — and
// agentrl ÷ llama.cpp of the medians next to issue #20's target for that
// ratio (load and RSS: lower is better). Peak RSS is the engine's after load
// with its KV cache populated (512 MiB in run_shapes.sh) and llama.cpp's
// through load, prefill and batch-1 decode (a 2048-position F32 KV cache);
// the engine's own target, RSS ≤ 1.1 × (weights + KV cache), gets a row of
// its own, and our bf16 and int8 batch-1 decode are set against our fp32
// (issue #20: bf16 ≥ 1.8× fp32 at 0.6b). Runs that failed or printed no
// numbers are left out of the medians; the column n says how many rounds each
// side contributed.
import fs from "node:fs";
import path from "node:path";

const dirs = process.argv.slice(2);
if (dirs.length === 0) {
  console.error("usage: node summarize.mjs LOG_DIR [LOG_DIR...]");
  process.exit(2);
}

const dtypeRE = "(bf16|bf16map|bf16zmap|fp32|fp32map|int8|int8map)";
const nameRE = new RegExp(`^(.+)-${dtypeRE}-(\\d{8}T\\d{6})-r(\\d+)-(agentrl|llamacpp)\\.log$`);
const interleavedRE = new RegExp(`^(.+)-${dtypeRE}-(\\d{8}T\\d{6})-interleaved\\.log$`);
const num = (re, text) => {
  const m = re.exec(text);
  return m ? Number(m[1]) : undefined;
};

// parseOurs reads the table `agentrl bench engine` prints.
function parseOurs(text) {
  const rss = /^peak RSS after load\s+([\d.]+) MB\s+weights ([\d.]+) MB \+ KV cache ([\d.]+) MB/m.exec(text);
  return {
    probe: num(/^memory bandwidth \(read, all threads\)\s+([\d.]+) GB\/s/m, text),
    mbPerToken: num(/\(([\d.]+) MB read per token/, text),
    load: num(/^model load \(open to ready\)\s+([\d.]+) s/m, text),
    rss: rss ? Number(rss[1]) : undefined,
    rssBound: rss ? Number(rss[1]) / (Number(rss[2]) + Number(rss[3])) : undefined,
    prefill: num(/^prefill \d+ tokens\s+([\d.]+) tok\/s/m, text),
    decode: num(/^batch-1 decode\s+([\d.]+) tok\/s/m, text),
    // (the label goes on with what the sequences follow: "after 16 tokens")
    aggregate: num(/^aggregate decode, \d+ sequences.*?\s([\d.]+) tok\/s/m, text),
  };
}

// lastJSON is the last line of text that starts with "{", parsed
// (undefined when there is none or it does not parse: a failed run).
function lastJSON(text) {
  const line = text.trim().split("\n").reverse().find((l) => l.startsWith("{"));
  try {
    return line === undefined ? undefined : JSON.parse(line);
  } catch {
    return undefined;
  }
}

// parseLlama reads the JSON line llamacpp_bench.mjs prints last.
// with the probes run_shapes.sh measured right before and after the run
// (agentrl bench bandwidth).
function parseLlama(text) {
  const probeOf = (when) => num(new RegExp(`^probe ${when}: memory bandwidth \\(read, all threads\\)\\s+([\\d.]+) GB\\/s`, "m"), text);
  const [probe, probeAfter] = [probeOf("before"), probeOf("after")];
  const j = lastJSON(text);
  if (!j) return {};
  return { probe, probeAfter, load: j.load_s, rss: j.max_rss_mb, prefill: j.prefill_tok_s, decode: j.decode_tok_s,
    aggregate: j.aggregate_decode_tok_s, perStep: j.aggregate_tokens_per_step ?? undefined, conc: j.concurrency };
}

// parseInterleaved reads the JSON line interleave.mjs prints last (A is
// agentrl, B llama.cpp): the per-round ratios and every measurement.
function parseInterleaved(text) {
  const j = lastJSON(text);
  return j && Array.isArray(j.ratios) && Array.isArray(j.a_tok_s) && Array.isArray(j.b_tok_s) ? j : undefined;
}

const runs = new Map(); // "shape dtype" → {shape, dtype, agentrl: [], llamacpp: [], interleaved: []}
const loads = []; // 1-minute load averages from the run headers
const group = (shape, dtype) => {
  const key = `${shape} ${dtype}`;
  if (!runs.has(key)) runs.set(key, { shape, dtype, agentrl: [], llamacpp: [], interleaved: [] });
  return runs.get(key);
};
for (const dir of dirs) {
  for (const f of fs.readdirSync(dir).sort()) {
    const m = nameRE.exec(f), im = interleavedRE.exec(f);
    if (!m && !im) continue;
    const text = fs.readFileSync(path.join(dir, f), "utf8");
    const l = /^(?:==|--) .* load ([\d.]+)/m.exec(text);
    if (l) loads.push(Number(l[1]));
    if (im) {
      const j = parseInterleaved(text);
      if (j) group(im[1], im[2]).interleaved.push(j);
      continue;
    }
    const [, shape, dtype, , , side] = m;
    group(shape, dtype)[side].push(side === "agentrl" ? parseOurs(text) : parseLlama(text));
  }
}
if (runs.size === 0) {
  console.error(`summarize: no SHAPE-DTYPE-STAMP-rN-SIDE.log files in ${dirs.join(", ")}`);
  process.exit(1);
}

function median(xs) {
  const a = xs.filter((x) => typeof x === "number" && Number.isFinite(x)).sort((x, y) => x - y);
  if (a.length === 0) return undefined;
  const h = Math.floor(a.length / 2);
  return a.length % 2 ? a[h] : (a[h - 1] + a[h]) / 2;
}
const fmt = (x, digits) => (x === undefined ? "–" : x.toFixed(digits));
const count = (rs, k) => rs.filter((r) => typeof r[k] === "number").length;

const shapeOrder = ["tiny", "0.6b", "1.7b", "4b"];
const dtypeOrder = ["bf16", "bf16map", "bf16zmap", "fp32", "fp32map", "int8", "int8map"];
const gguf = { bf16: "BF16", bf16map: "BF16", bf16zmap: "BF16", fp32: "F32", fp32map: "F32", int8: "Q8_0", int8map: "Q8_0" };
const rank = (order, v) => (order.includes(v) ? order.indexOf(v) : order.length);
const groups = [...runs.values()].sort((a, b) =>
  rank(shapeOrder, a.shape) - rank(shapeOrder, b.shape) || a.shape.localeCompare(b.shape) ||
  rank(dtypeOrder, a.dtype) - rank(dtypeOrder, b.dtype));

// Each measurement: key, label, unit digits, target on agentrl ÷ llama.cpp.
const rows = [
  ["load", "model load, s", 2, (r) => r <= 1, "≤ 1"],
  ["rss", "peak RSS, MB", 0, null, ""],
  ["prefill", "prefill 512 tokens, tok/s", 1, (r) => r >= 2, "≥ 2"],
  ["decode", "batch-1 decode, tok/s", 1, (r) => r >= 1.3, "≥ 1.3"],
  ["aggregate", "aggregate decode 32 seq, tok/s", 1, (r) => r >= 3, "≥ 3"],
];

const out = [];
const lo = Math.min(...loads), hi = Math.max(...loads);
out.push(`Medians over rounds (n = rounds per side); ratio = agentrl ÷ llama.cpp; 1-minute load average at the runs' starts ${loads.length ? `${lo.toFixed(1)}–${hi.toFixed(1)}` : "unknown"}.`);
out.push("");
out.push("| shape | weights | measurement | agentrl | llama.cpp | ratio | target | n |");
out.push("|---|---|---|---|---|---|---|---|");
for (const g of groups) {
  for (const [k, label, digits, ok, target] of rows) {
    const a = median(g.agentrl.map((r) => r[k])), b = median(g.llamacpp.map((r) => r[k]));
    const ratio = a !== undefined && b !== undefined && b > 0 ? a / b : undefined;
    const met = ok && ratio !== undefined ? (ok(ratio) ? " met" : " missed") : "";
    out.push(`| ${g.shape} | ${g.dtype} vs ${gguf[g.dtype]} | ${label} | ${fmt(a, digits)} | ${fmt(b, digits)} | ` +
      `${ratio === undefined ? "–" : ratio.toFixed(2) + "×"} | ${target ? target + met : ""} | ` +
      `${count(g.agentrl, k)}/${count(g.llamacpp, k)} |`);
  }
  // Batch-1 decode against the bandwidth on offer: each side's rate × the
  // bytes a step reads (the same weights) ÷ a probe — ours measured after
  // loading, before our runs; llama.cpp's right before and right after its
  // run, both shown, as the host's bandwidth can move by 2× within the run.
  const mb = median(g.agentrl.map((r) => r.mbPerToken));
  const frac = (rs, k) => median(rs.map((r) => (mb && r[k] ? (r.decode * mb) / (r[k] * 1000) : undefined)));
  const fa = frac(g.agentrl, "probe"), fb = frac(g.llamacpp, "probe"), fc = frac(g.llamacpp, "probeAfter");
  if (fb !== undefined || fc !== undefined) {
    out.push(`| ${g.shape} | ${g.dtype} vs ${gguf[g.dtype]} | batch-1 decode ÷ read bound (the probe before / after the run) | ${fmt(fa, 2)} | ` +
      `${fmt(fb, 2)} / ${fmt(fc, 2)} | | | ${count(g.agentrl, "probe")}/${count(g.llamacpp, "probe")} |`);
  }
  // Batch-1 decode measured interleaved (interleave.mjs): the median of
  // the per-round ratios of all its runs, and each side's median rate.
  if (g.interleaved.length) {
    const rs = g.interleaved.flatMap((j) => j.ratios);
    const r = median(rs);
    out.push(`| ${g.shape} | ${g.dtype} vs ${gguf[g.dtype]} | batch-1 decode interleaved (A B B A, seconds apart), tok/s | ` +
      `${fmt(median(g.interleaved.flatMap((j) => j.a_tok_s)), 1)} | ${fmt(median(g.interleaved.flatMap((j) => j.b_tok_s)), 1)} | ` +
      `${fmt(r, 2)}× (rounds ${fmt(Math.min(...rs), 2)}–${fmt(Math.max(...rs), 2)}) | ≥ 1.3${r === undefined ? "" : r >= 1.3 ? " met" : " missed"} | ` +
      `${rs.length} rounds |`);
  }
  // The engine's own memory target: peak RSS ≤ 1.1 × (weights + KV cache).
  const rb = median(g.agentrl.map((r) => r.rssBound));
  out.push(`| ${g.shape} | ${g.dtype} | agentrl peak RSS ÷ (weights + KV cache) | ${fmt(rb, 2)} | | | ` +
    `≤ 1.1${rb === undefined ? "" : rb <= 1.1 ? " met" : " missed"} | ${count(g.agentrl, "rssBound")} |`);
}

// Our bf16 batch-1 decode against our own fp32 (target ≥ 1.8× at 0.6b).
const own = [];
for (const shape of new Set(groups.map((g) => g.shape))) {
  const d = (dt) => median((runs.get(`${shape} ${dt}`)?.agentrl ?? []).map((r) => r.decode));
  const b = d("bf16"), f = d("fp32"), q = d("int8");
  if (b !== undefined && f !== undefined) {
    own.push(`- ${shape}: agentrl bf16 batch-1 decode ÷ agentrl fp32 = ${(b / f).toFixed(2)}×` +
      (shape === "0.6b" ? ` (target ≥ 1.8×: ${b / f >= 1.8 ? "met" : "missed"})` : "") +
      (q !== undefined ? `; int8 ÷ fp32 = ${(q / f).toFixed(2)}×` : ""));
  }
}
// How well node-llama-cpp batched the sequences in its aggregate decode.
for (const g of groups) {
  const ps = median(g.llamacpp.map((r) => r.perStep));
  if (ps !== undefined) {
    own.push(`- ${g.shape} ${gguf[g.dtype]}: llama.cpp's aggregate decode steps held ${ps.toFixed(1)} of ` +
      `${g.llamacpp.find((r) => r.conc)?.conc ?? "?"} sequences on average`);
  }
}
if (own.length) out.push("", ...own);
console.log(out.join("\n"));
