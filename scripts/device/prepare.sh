#!/usr/bin/env bash
# Makes this checkout ready to run on the workplace's GPU machine (examples/pace/README.md, "On this workplace's device
# machine"): that machine has no Node, and a call carries the working tree plus at most 64 MiB in all.
#
#   bash scripts/device/prepare.sh          builds dist/, packs Node into .carry/ and switches to a slim branch
#   bash scripts/device/prepare.sh back     returns to the branch it came from (the shipped runs come back)
#
# The slim branch (`device-slim`, never pushed) is HEAD without the shipped traces and run directories (about 70 MB);
# what the device needs travels in `carry`:
#   [".carry", "dist/gpuwise.mjs", "node_modules/koffi", "node_modules/node-sqlite3-wasm",
#    "node_modules/@koromix/koffi-linux-x64"]
# and each command there starts with `source .carry/setup.sh` (Node unpacked into /tmp, on PATH; the NCCL settings
# the workplace asks for). Commit your work first: the switch refuses a dirty tree.
set -euo pipefail
cd "$(dirname "$0")/../.."
SLIM=device-slim
HEAVY=(examples/traces examples/realworld/runs examples/doctor/runs examples/pace/runs examples/levers/runs)

if [ "${1:-}" = back ]; then
  from=$(cat .carry/from-branch 2>/dev/null || echo main)
  git switch -q "$from"
  git branch -q -D "$SLIM"
  echo "prepare.sh: back on $from"
  exit 0
fi

if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
  echo "prepare.sh: commit or stash your changes first (the slim branch is made from HEAD)" >&2
  exit 1
fi
npm run build >/dev/null
mkdir -p .carry
node_bin=$(command -v node)
if [ ! -f .carry/node.xz ] || [ "$node_bin" -nt .carry/node.xz ]; then
  xz -T0 -6 -c "$node_bin" > .carry/node.xz
fi
cat > .carry/setup.sh <<'EOF'
# Sourced at the start of each command on the device machine: Node from .carry/node.xz (Python's lzma: the machine
# may lack xz), and the NCCL settings the workplace asks for (no NVLink multicast).
if [ ! -x /tmp/gpuwise-node/bin/node ]; then
  mkdir -p /tmp/gpuwise-node/bin
  python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' .carry/node.xz /tmp/gpuwise-node/bin/node
  chmod +x /tmp/gpuwise-node/bin/node
fi
export PATH=/tmp/gpuwise-node/bin:$PATH
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
EOF
git branch --show-current > .carry/from-branch
git switch -q -C "$SLIM"
git rm -r -q --ignore-unmatch "${HEAVY[@]}"
git commit -q -m "device: the shipped traces and run directories left behind (never merged)"
tree=$(git ls-files -z | du -cb --files0-from=- | tail -1 | cut -f1)
carry=$(du -cb .carry dist/gpuwise.mjs node_modules/koffi node_modules/node-sqlite3-wasm node_modules/@koromix/koffi-linux-x64 | tail -1 | cut -f1)
echo "prepare.sh: on $SLIM; the tree $((tree / 1048576)) MiB + carry $((carry / 1048576)) MiB of the 64 MiB a call takes"
