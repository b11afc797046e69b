# Sourced by the regen.sh scripts of cuda/testdata and cuda/train/testdata
# (from the repository root): builds the agentrl command into a temporary
# directory $tmp, removed on exit, and defines
#   init NAME SEED FLAGS...
# which writes the tiny random model `agentrl model init` makes from FLAGS
# and SEED (weights are a pure function of both, model.RandomWeights) to
# $tmp/NAME.
set -eu
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/agentrl" ./cmd/agentrl
init() { name=$1; seed=$2; shift 2; "$tmp/agentrl" model init --seed "$seed" --out "$tmp/$name" "$@" >/dev/null; }
