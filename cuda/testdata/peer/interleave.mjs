// Interleaved batch-1 decode: two processes that speak the protocol of
// `agentrl bench batch1` (and llamacpp_batch1.mjs) stay loaded side by side
// while this driver asks them for measurements in turn, a few seconds apart,
// A B B A in every round so that a drift within a round cancels. On a shared
// machine the read bandwidth on offer moves from minute to minute; whole
// benchmark runs of either side minutes apart (run_shapes.sh) compare
// different machines, measurements seconds apart the same one.
//   node interleave.mjs ROUNDS -- A_COMMAND... -- B_COMMAND...
// Prints each measurement as it comes and then one JSON line: every rate,
// the per-round ratios mean(A)/mean(B), their median, and each side's median
// rate. One measurement of each side before the rounds is not counted (the
// first decode pays for page faults and allocations). A side that fails, or
// says nothing for INTERLEAVE_TIMEOUT_S seconds (default 600), ends the run
// with an error.
import { spawn } from "node:child_process";
import readline from "node:readline";

const argv = process.argv.slice(2);
const rounds = Number(argv[0]);
const sep = argv.indexOf("--", 1), sep2 = sep < 0 ? -1 : argv.indexOf("--", sep + 1);
if (!Number.isInteger(rounds) || rounds < 1 || argv[1] !== "--" || sep2 < 0 || sep2 === sep + 1 || sep2 === argv.length - 1) {
  console.error("usage: node interleave.mjs ROUNDS -- A_COMMAND... -- B_COMMAND...");
  process.exit(2);
}
const cmds = [argv.slice(sep + 1, sep2), argv.slice(sep2 + 1)];
const limitMs = 1000 * Number(process.env.INTERLEAVE_TIMEOUT_S || 600);

// side starts a command and returns a function that sends one line and
// resolves with the next line of its output.
const side = (cmd, name) => {
  const p = spawn(cmd[0], cmd.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
  const lines = readline.createInterface({ input: p.stdout })[Symbol.asyncIterator]();
  let exited = null;
  p.on("exit", (code, sig) => { exited = `${name} exited (code ${code}, signal ${sig})`; });
  p.on("error", (e) => { exited = `${name}: ${e.message}`; });
  p.stdin.on("error", () => {}); // a side that died: its exit is the error reported
  // next is the side's next output line; a side that says nothing for
  // limitMs (a load or a measurement that hangs) is an error, not a wait
  // forever.
  const next = async () => {
    let timer;
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${name}: no answer in ${limitMs / 1000} s`)), limitMs);
    });
    try {
      const r = await Promise.race([lines.next(), timeout]);
      if (r.done) throw new Error(exited ?? `${name} closed its output`);
      return r.value;
    } finally {
      clearTimeout(timer);
    }
  };
  return {
    proc: p,
    ready: async () => {
      const l = await next();
      if (l !== "ready") throw new Error(`${name}: want "ready", got ${JSON.stringify(l)}`);
    },
    decode: async () => {
      p.stdin.write("decode\n");
      const l = await next();
      const m = /^batch1 ([0-9.]+) tok\/s$/.exec(l);
      if (!m) throw new Error(`${name}: want "batch1 RATE tok/s", got ${JSON.stringify(l)}`);
      return Number(m[1]);
    },
  };
};

const median = (a) => {
  const s = [...a].sort((x, y) => x - y);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const sides = cmds.map((c, i) => side(c, i ? "B" : "A"));
try {
  // Loaded one after the other: both loading at once would time neither.
  for (const s of sides) await s.ready();
  for (const s of sides) await s.decode();
  const rates = [[], []], ratios = [];
  for (let r = 0; r < rounds; r++) {
    const got = [[], []];
    for (const i of [0, 1, 1, 0]) {
      const v = await sides[i].decode();
      got[i].push(v);
      rates[i].push(v);
      console.log(`round ${r} ${i ? "B" : "A"} ${v.toFixed(3)} tok/s`);
    }
    ratios.push((got[0][0] + got[0][1]) / (got[1][0] + got[1][1]));
  }
  console.log(JSON.stringify({ rounds, a: cmds[0].join(" "), b: cmds[1].join(" "),
    median_ratio: median(ratios), a_median_tok_s: median(rates[0]), b_median_tok_s: median(rates[1]),
    ratios, a_tok_s: rates[0], b_tok_s: rates[1] }));
  for (const s of sides) {
    s.proc.stdin.end("quit\n");
    // Past the time limit a side still running is stopped.
    setTimeout(() => s.proc.kill(), limitMs).unref();
  }
} catch (e) {
  // Neither side outlives a failed run.
  for (const s of sides) {
    s.proc.stdin.end();
    s.proc.kill();
  }
  console.error(`interleave: ${e.message}`);
  process.exitCode = 1;
}
