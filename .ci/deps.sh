# shellcheck shell=bash
# What the tests need on Debian 12 (bookworm), installed only when missing:
# sourced by .ci/run, and by .ci/verify-debian12, which checks it in a fresh
# debootstrap'ed bookworm. Idempotent: a second run installs nothing and
# edits no apt source.

# ci_sudo runs a command as root (sudo when not root already).
ci_sudo() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# ci_add_components FILE COMPONENT... adds the components to every entry of
# an apt sources FILE that has `main` (Debian's archives) and lacks them.
# Components are compared as whole words, so `non-free-firmware` (in every
# stock Debian 12 source) does not count as `non-free`. Handles both
# formats: deb822 `*.sources` (a `Components:` field per stanza) and
# one-line `*.list` / sources.list (`deb [opts] URI SUITE COMPONENT...`).
# Prints the file name when it changed it.
ci_add_components() {
  local file=$1
  shift
  local tmp
  tmp=$(mktemp)
  awk -v want="$*" '
    function fix(comps,   n, have, i, w, out) {
      n = split(comps, have, /[ \t]+/)
      delete set
      for (i = 1; i <= n; i++) if (have[i] != "") set[have[i]] = 1
      if (!("main" in set)) return comps
      out = comps
      n = split(want, w, " ")
      for (i = 1; i <= n; i++) if (!(w[i] in set)) out = out " " w[i]
      return out
    }
    # deb822: "Components: main non-free-firmware" (field names are
    # case-insensitive).
    tolower($0) ~ /^components:/ {
      i = index($0, ":")
      val = substr($0, i + 1)
      sub(/^[ \t]+/, "", val); sub(/[ \t]+$/, "", val)
      print substr($0, 1, i) " " fix(val)
      next
    }
    # One-line format: deb [ options ] URI SUITE COMPONENT...
    /^[ \t]*deb(-src)?[ \t]/ {
      line = $0
      match(line, /^[ \t]*deb(-src)?[ \t]+/)
      head = substr(line, 1, RLENGTH); rest = substr(line, RLENGTH + 1)
      if (rest ~ /^\[/) {
        j = index(rest, "]")
        if (j == 0) { print; next }
        head = head substr(rest, 1, j); rest = substr(rest, j + 1)
        match(rest, /^[ \t]*/); head = head substr(rest, 1, RLENGTH); rest = substr(rest, RLENGTH + 1)
      }
      comment = ""
      if ((k = index(rest, "#")) > 0) { comment = " " substr(rest, k); rest = substr(rest, 1, k - 1) }
      sub(/[ \t]+$/, "", rest)
      n = split(rest, f, /[ \t]+/)
      if (n < 3) { print; next }
      comps = f[3]
      for (i = 4; i <= n; i++) comps = comps " " f[i]
      print head f[1] " " f[2] " " fix(comps) comment
      next
    }
    { print }
  ' "$file" >"$tmp"
  if cmp -s "$file" "$tmp"; then
    rm -f "$tmp"
  else
    ci_sudo cp "$tmp" "$file"
    rm -f "$tmp"
    echo "$file"
  fi
}

# ci_enable_nonfree adds contrib and non-free (nvidia-cuda-toolkit's
# component, and contrib which non-free packages may depend on) to every
# Debian source. Prints what it changed.
ci_enable_nonfree() {
  local f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    ci_add_components "$f" contrib non-free
  done
}

# ci_debian_uri prints the archive URI this machine's own apt sources use
# for SUITE (deb822 stanzas or one-line entries), so that nothing here
# names a mirror: the one the machine was set up with is the one to use.
ci_debian_uri() {
  local suite=${1:-bookworm} f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk -v suite="$suite" '
      function flush() { if (uri != "" && hit) { print uri; found = 1; exit } uri = ""; hit = 0 }
      /^[ \t]*$/ { flush(); next }
      /^[ \t]*#/ { next }
      tolower($1) == "uris:" { uri = $2; next }
      tolower($1) == "suites:" { for (i = 2; i <= NF; i++) if ($i == suite) hit = 1; next }
      $1 == "deb" {
        j = 2
        if ($2 ~ /^\[/) { while (j <= NF && $j !~ /\]$/) j++; j++ }
        if ($(j + 1) == suite) { print $j; found = 1; exit }
      }
      END { if (!found && uri != "" && hit) print uri }
    ' "$f"
  done | head -n1
}

# ci_go_ok says whether `go` runs and can build the module: Go 1.21 and
# newer switch to the go.mod's toolchain (go 1.24) by themselves.
ci_go_ok() {
  command -v go >/dev/null 2>&1 || return 1
  local v
  # The installed Go's own version: outside the module and with
  # GOTOOLCHAIN=local, so that this check does not fetch a toolchain.
  v=$(cd / && GOTOOLCHAIN=local go env GOVERSION 2>/dev/null) || return 1
  v=${v#go}
  local major=${v%%.*} rest=${v#*.}
  local minor=${rest%%[!0-9]*}
  [ "$major" -gt 1 ] || [ "$minor" -ge 21 ]
}

# ci_go_path puts a Go that Debian installed outside PATH (backports'
# golang-1.23-go) on PATH when there is no go on it.
ci_go_path() {
  if ! command -v go >/dev/null 2>&1 && [ -x /usr/lib/go-1.23/bin/go ]; then
    export PATH=$PATH:/usr/lib/go-1.23/bin
  fi
}

# ci_install_deps installs what is missing and prints what it did.
ci_install_deps() {
  export DEBIAN_FRONTEND=noninteractive
  ci_go_path
  local need=() sources_changed="" backports=""
  command -v make >/dev/null 2>&1 || need+=(make)
  command -v gcc >/dev/null 2>&1 || need+=(gcc)
  # cgo (the in-process engine) needs the C library headers; the gcc
  # package only recommends them.
  [ -e /usr/include/stdio.h ] || need+=(libc6-dev)
  # nvcc compiles the kernels' host code with the C++ compiler on PATH.
  command -v g++ >/dev/null 2>&1 || need+=(g++)
  command -v git >/dev/null 2>&1 || need+=(git)
  # Module downloads and the newcomer test's clone verify TLS.
  [ -e /etc/ssl/certs/ca-certificates.crt ] || need+=(ca-certificates)
  # The Python tool's sandbox tests run it under bubblewrap.
  command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
  # capture's Redis store tests (replicas sharing rollouts) start their own
  # redis-server; under CI=1 they fail without it.
  command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
  # The trajectory viewer's browser test loads the report in headless Chromium.
  command -v chromium >/dev/null 2>&1 || need+=(chromium)
  # numpy reads our safetensors output in an interop test; python3 runs the
  # tool sandbox tests and the live Python cross-checks.
  { [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import numpy' 2>/dev/null; } || need+=(python3-numpy)
  # PyTorch loads the safetensors batch and runs verl's trainer index ops on
  # it (trajectory and the verl conformance test); Debian's own python3.
  { [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import torch' 2>/dev/null; } || need+=(python3-torch)
  # nvcc compiles and links the CUDA kernels (build tag `cuda`). It is in
  # Debian's non-free component, which stock sources do not enable (they
  # enable non-free-firmware, a different component).
  if ! command -v nvcc >/dev/null 2>&1; then
    need+=(nvidia-cuda-toolkit)
    sources_changed=$(ci_enable_nonfree)
  fi
  # Debian 12's own Go is 1.19, too old to build the module or to fetch the
  # toolchain go.mod names; bookworm-backports has 1.23, which fetches it.
  if ! ci_go_ok; then
    need+=(golang-1.23-go)
    backports=bookworm-backports
    if ! grep -rqsE '(^|[[:space:]])bookworm-backports([[:space:]]|$)' /etc/apt/sources.list /etc/apt/sources.list.d/; then
      local mirror
      mirror=$(ci_debian_uri bookworm)
      if [ -z "$mirror" ]; then
        echo "ci: no Go >= 1.21 and no bookworm entry in the apt sources to add bookworm-backports from" >&2
        return 1
      fi
      echo "deb $mirror bookworm-backports main" | ci_sudo tee /etc/apt/sources.list.d/agentrl-backports.list >/dev/null
      sources_changed="$sources_changed /etc/apt/sources.list.d/agentrl-backports.list"
    fi
  fi
  if [ -n "$sources_changed" ]; then
    echo "ci: enabled in apt sources:" $sources_changed
  fi
  if [ "${#need[@]}" -gt 0 ]; then
    echo "ci: installing ${need[*]}"
    ci_sudo apt-get update -qq
    if [ -n "$backports" ]; then
      ci_sudo apt-get install -y -qq --no-install-recommends -t "$backports" golang-1.23-go
      local pkgs=()
      local p
      for p in "${need[@]}"; do [ "$p" = golang-1.23-go ] || pkgs+=("$p"); done
      need=("${pkgs[@]}")
    fi
    if [ "${#need[@]}" -gt 0 ]; then
      ci_sudo apt-get install -y -qq --no-install-recommends "${need[@]}"
    fi
  else
    echo "ci: nothing to install"
  fi
  ci_go_path
}
