#!/bin/sh
# Side-by-side measurement of the engine and llama.cpp at real model shapes
# (Qwen3-0.6B, -1.7B and -4B dimensions, random weights) in bf16, fp32 and
# int8, alternating runs so both see the same machine state. Run from the
# repository root:
#   sh cuda/testdata/peer/run_shapes.sh SCRATCH_DIR [rounds] [shapes] [dtypes]
#   node cuda/testdata/peer/summarize.mjs SCRATCH_DIR/logs   # markdown table
# rounds: default 2. shapes: any of 0.6b 1.7b 4b, or tiny (2 layers, hidden
# 256, the real vocabulary: a smoke test of the harness; default "0.6b").
# dtypes: any of bf16 bf16map bf16zmap fp32 fp32map int8 int8map (default
# "bf16 fp32 int8"): bf16map runs our bf16 weights computing from the mapped checkpoint
# (the engine's default load, as llama.cpp maps its GGUF) against a BF16 GGUF
# export, bf16 the same weights copied into the engine's memory (--copy);
# int8map and fp32map run the checkpoint packed once in our layout (agentrl
# model pack, as the GGUF exports are converted once) and mapped, against the
# Q8_0 and F32 exports; bf16zmap the checkpoint packed as bf16z (the same
# bf16 values compressed losslessly: bf16's results, 3/4 of the bytes) and
# mapped, against the BF16 export; fp32 our fp32 weights (converted at load from the
# bf16 checkpoint; its values are bf16 values, which our fp32 matrices hold in
# half the bytes, widened exactly in registers: fp32 products at bf16's
# bandwidth) against an F32 export, int8 our int8 weights (quantized
# at load) against a Q8_0 export. SCRATCH_DIR must hold
# node_modules with node-llama-cpp and @node-llama-cpp/linux-x64 (see
# run.sh); checkpoints (bf16 safetensors, sharded as released models are)
# and GGUF exports are made there once and reused.
#
# Each round runs, per dtype, `agentrl bench engine` and then
# llamacpp_bench.mjs, both 3 reps, 2 threads, 512-token prefill, 32 tokens
# per decode measurement, 32 sequences in the aggregate decode (see the two
# programs for what each number times); `agentrl bench bandwidth` measures
# the read bandwidth right before and after the llama.cpp run, as bench
# engine does before its own. Right before each timed run the
# files it loads are read once (cat > /dev/null) so that both sides load from
# a warm page cache; when a shape is done its files are dropped from the
# page cache (dd iflag=nocache), so the next shape's are not evicted by
# them. Each run's output goes to SCRATCH_DIR/logs (or $PEER_LOGS) as
# SHAPE-DTYPE-STAMP-rN-{agentrl,llamacpp}.log, which summarize.mjs reads
# (medians over rounds of every log in the directory); a failed run is
# reported and the rest go on.
#
# Batch-1 decode is also measured interleaved: after the rounds, for each
# dtype, `agentrl bench batch1` and llamacpp_batch1.mjs are loaded side by
# side and interleave.mjs asks them for batch-1 decode measurements in turn,
# a few seconds apart, A B B A per round ($PEER_INTERLEAVE rounds, default
# 8; 0 skips it), into SHAPE-DTYPE-STAMP-interleaved.log. The whole runs
# above time each side minutes apart, and the read bandwidth this shared
# machine offers moves by up to 2× between them; measurements seconds apart
# see the same machine, which is what a ratio needs. Both sides' weights
# are then in memory at once, so this step needs twice a dtype's weights.
#
# Memory: a dtype is skipped, with a message, when its weights (ours, or the
# GGUF llama.cpp maps) plus 3 GB for KV caches and buffers exceed the
# machine's memory less 4 GB for everything else (override the memory
# considered with PEER_MEM_GB). On a 24 GB machine that skips fp32 at 4b
# (16 GB of fp32 weights): 4b runs bf16 and int8 only. PEER_PRUNE=1 deletes
# a shape's checkpoint and exports once its rounds are done (disk space).
set -eu
scratch=$1
rounds=${2:-2}
shapes=${3:-0.6b}
dtypes=${4:-bf16 fp32 int8}
logs=${PEER_LOGS:-$scratch/logs}
mkdir -p "$logs"
go build -o "$scratch/agentrl" ./cmd/agentrl
mem_kb=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)
[ -n "${PEER_MEM_GB:-}" ] && mem_kb=$((PEER_MEM_GB * 1024 * 1024))
stamp=$(date -u +%Y%m%dT%H%M%S)

# warm reads the files once so that the run after it loads from the page
# cache; evict drops them from it.
warm() { for f in "$@"; do cat "$f" >/dev/null; done; }
evict() { for f in "$@"; do [ -f "$f" ] && dd if="$f" iflag=nocache count=0 status=none; done; return 0; }
gguf_dtype() { case $1 in bf16map | bf16zmap) echo bf16 ;; int8 | int8map) echo q8_0 ;; fp32map) echo fp32 ;; *) echo "$1" ;; esac; }
gguf_of() { case $2 in bf16zmap) echo "$1-bf16.gguf" ;; *map) echo "$1-${2%map}.gguf" ;; *) echo "$1-$2.gguf" ;; esac; }
# ours: the bench engine flags for a dtype; ourdir: the model directory it loads.
ours() { case $1 in bf16map) echo "--weights bf16" ;; *map) echo "" ;; *) echo "--weights $1 --copy" ;; esac; }
ourdir() { case $2 in int8map | fp32map | bf16zmap) echo "$1-packed-${2%map}" ;; *) echo "$1" ;; esac; }
gb() { awk -v kb="$1" 'BEGIN { printf "%.1f", kb / 1048576 }'; }
# probe appends the read bandwidth bench engine's decode bound uses, measured
# now, to a llama.cpp log (before and after its run), so that summarize.mjs can
# set llama.cpp's batch-1 decode against the bandwidth on offer as it does ours.
probe() { "$scratch/agentrl" bench bandwidth --bytes 536870912 --reps 3 | sed "s/^/probe $1: /" >>"$2" || true; }

for shape in $shapes; do
  case $shape in
  tiny) dims="--layers 2 --hidden 256 --heads 4 --kv-heads 2 --head-dim 64 --intermediate 768" ;;
  0.6b) dims="--layers 28 --hidden 1024 --heads 16 --kv-heads 8 --head-dim 128 --intermediate 3072" ;;
  1.7b) dims="--layers 28 --hidden 2048 --heads 16 --kv-heads 8 --head-dim 128 --intermediate 6144" ;;
  4b) dims="--layers 36 --hidden 2560 --heads 32 --kv-heads 8 --head-dim 128 --intermediate 9728" ;;
  *) echo "unknown shape $shape" >&2; exit 2 ;;
  esac
  dir="$scratch/qwen3-$shape"
  if [ ! -f "$dir/config.json" ]; then
    # shellcheck disable=SC2086
    "$scratch/agentrl" model init --arch qwen3 $dims --vocab 151936 --tie --max-pos 4096 --seed 1 \
      --dtype bf16 --shard-size 2000000000 --out "$dir"
  fi
  ckpt_kb=$(du -k -c "$dir"/*.safetensors | tail -1 | cut -f1) # bf16: 2 bytes a parameter
  # need_of: the KB of weights a dtype's larger side holds.
  need_of() {
    case $1 in
    bf16 | bf16map | bf16zmap) echo "$ckpt_kb" ;; # bf16z: 3/4 of it, against the BF16 GGUF
    fp32 | fp32map) echo $((ckpt_kb * 23 / 10)) ;; # the F32 export: 4 bytes a parameter, and the tied head's copy
    int8 | int8map) echo $((ckpt_kb * 6 / 10)) ;;  # 34 bytes per 32 parameters
    esac
  }
  run_dtypes=
  for dt in $dtypes; do
    case $dt in
    bf16 | bf16map | bf16zmap | fp32 | fp32map | int8 | int8map) ;;
    *) echo "unknown dtype $dt" >&2; exit 2 ;;
    esac
    need_kb=$(($(need_of "$dt") + 3 * 1024 * 1024))
    if [ "$need_kb" -gt $((mem_kb - 4 * 1024 * 1024)) ]; then
      echo "skipping $shape $dt: needs about $(gb "$need_kb") GB of memory; the machine has $(gb "$mem_kb") GB, 4 GB of it kept for the rest"
      continue
    fi
    run_dtypes="$run_dtypes $dt"
    gdt=$(gguf_dtype "$dt")
    [ -f "$(gguf_of "$dir" "$dt")" ] || "$scratch/agentrl" model gguf --model "$dir" --dtype "$gdt" --out "$(gguf_of "$dir" "$dt")"
    case $dt in
    int8map | fp32map | bf16zmap)
      [ -f "$(ourdir "$dir" "$dt")/config.json" ] ||
        "$scratch/agentrl" model pack --model "$dir" --weights "${dt%map}" --out "$(ourdir "$dir" "$dt")" ;;
    esac
  done
  i=0
  while [ "$i" -lt "$rounds" ]; do
    for dt in $run_dtypes; do
      base="$logs/$shape-$dt-$stamp-r$i"
      head="== $shape $dt round $i $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
      echo "$head"
      od=$(ourdir "$dir" "$dt")
      warm "$od"/*.safetensors
      { echo "$head"; echo "cmd: agentrl bench engine $(ours "$dt") ($(basename "$od"))"; } >"$base-agentrl.log"
      # shellcheck disable=SC2046
      "$scratch/agentrl" bench engine --model "$od" $(ours "$dt") --reps 3 --decode-tokens 32 \
        --prefill-tokens 512 --concurrency 32 --kv-memory 536870912 --bandwidth-bytes 536870912 \
        >>"$base-agentrl.log" 2>&1 || echo "FAILED: agentrl bench engine ($shape $dt), see $base-agentrl.log"
      tail -n +3 "$base-agentrl.log"
      sync
      g=$(gguf_of "$dir" "$dt")
      warm "$g"
      { echo "-- $shape $dt round $i $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
        echo "cmd: llamacpp_bench.mjs $(basename "$g") 3 512 32 2 32"; } >"$base-llamacpp.log"
      probe before "$base-llamacpp.log"
      NODE_PATH="$scratch/node_modules" node cuda/testdata/peer/llamacpp_bench.mjs "$g" 3 512 32 2 32 \
        >>"$base-llamacpp.log" 2>&1 || echo "FAILED: llamacpp_bench.mjs ($shape $dt), see $base-llamacpp.log"
      probe after "$base-llamacpp.log"
      tail -n 1 "$base-llamacpp.log"
    done
    i=$((i + 1))
  done
  for dt in $run_dtypes; do
    [ "${PEER_INTERLEAVE:-8}" -gt 0 ] || break
    if [ $((2 * $(need_of "$dt") + 3 * 1024 * 1024)) -gt $((mem_kb - 4 * 1024 * 1024)) ]; then
      echo "skipping the interleaved batch-1 decode of $shape $dt: both sides' weights do not fit in memory at once"
      continue
    fi
    od=$(ourdir "$dir" "$dt")
    g=$(gguf_of "$dir" "$dt")
    log="$logs/$shape-$dt-$stamp-interleaved.log"
    head="== $shape $dt interleaved $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "$head"
    warm "$od"/*.safetensors "$g"
    { echo "$head"; echo "A: agentrl bench batch1 $(ours "$dt") ($(basename "$od")); B: llamacpp_batch1.mjs $(basename "$g") 32 2"; } >"$log"
    # shellcheck disable=SC2046
    NODE_PATH="$scratch/node_modules" node cuda/testdata/peer/interleave.mjs "${PEER_INTERLEAVE:-8}" -- \
      "$scratch/agentrl" bench batch1 --model "$od" $(ours "$dt") --decode-tokens 32 --kv-memory 536870912 -- \
      node cuda/testdata/peer/llamacpp_batch1.mjs "$g" 32 2 >>"$log" 2>&1 ||
      echo "FAILED: interleaved batch-1 decode ($shape $dt), see $log"
    tail -n 1 "$log"
  done
  # This shape's files leave the page cache (or the disk) so that the next
  # shape's runs have the memory to themselves.
  evict "$dir"/*.safetensors "$dir"-*.gguf "$dir"-packed-*/*.safetensors
  if [ "${PEER_PRUNE:-0}" = 1 ]; then
    rm -rf "$dir" "$dir"-*.gguf "$dir"-packed-*
  fi
done
