#!/usr/bin/env bash
# The GPU part of the performance suite and the numerics tests, on a CUDA machine, in under 8 minutes.
#
#   bash bench/gpu.sh OUT_DIR [--cpu-rehearsal]
#
# Installs nothing from the network: Node.js and node_modules come from bench/gpu-kit (bench/make-gpu-kit.sh, carried
# with the working tree as a git-ignored path). Writes to OUT_DIR: gpu.log (everything), summary.md, machine.txt
# (nvidia-smi, CUDA, Vulkan), doctor*.json/.log, numerics.log/.json (tests/unit/model/backends.test.ts), and
# bench-<backend>-<size>.json/.log per model size plus bench-<backend>.json (all sizes). Every step has a hard timeout
# taken from one budget (GPU_SH_BUDGET_S, default 450 s), so the script ends within 8 minutes whatever hangs.
# The bench runs `npm run bench`'s command once per size (GPU_SH_SIZES, default tiny,small,medium) with --parts
# engine (GPU_SH_BENCH_PARTS) on webgpu where a hardware adapter loads. GPU_SH_COMMIT names the commit in summary.md
# where the copy of the tree has no .git.
# --cpu-rehearsal: for a machine without a GPU: the bench runs on wasm, tiny size, one repeat, to exercise the path.
# Exit status: 0 when every step that ran succeeded, 1 otherwise (the output folder is written either way).
set -uo pipefail

OUT="" REHEARSAL=0
for a in "$@"; do
  case "$a" in
    --cpu-rehearsal) REHEARSAL=1 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    -*) echo "gpu.sh: unknown option $a" >&2; exit 2 ;;
    *) OUT="$a" ;;
  esac
done
[[ -n "$OUT" ]] || { echo "usage: bash bench/gpu.sh OUT_DIR [--cpu-rehearsal]" >&2; exit 2; }
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$OUT" && OUT="$(cd "$OUT" && pwd)"
cd "$ROOT"
exec > >(tee -a "$OUT/gpu.log") 2>&1

START=$(date +%s)
BUDGET=${GPU_SH_BUDGET_S:-450}
FAILED=0
: > "$OUT/steps.tsv"
say() { echo "[gpu.sh +$(( $(date +%s) - START ))s] $*"; }
left() { echo $(( BUDGET - ($(date +%s) - START) )); }
have() { command -v "$1" >/dev/null 2>&1; }
ldcache() { local l; l="$(command -v ldconfig || ls /sbin/ldconfig /usr/sbin/ldconfig 2>/dev/null | head -1)"; [[ -n "$l" ]] && "$l" -p 2>/dev/null; }
nocolor() { sed 's/\x1b\[[0-9;]*m//g'; }

# step NAME CAP_S LOG cmd…: run with a hard timeout (the smaller of CAP_S and what the budget leaves, less 20 s for
# the summary); record status and seconds in steps.tsv. Returns the command's status (124: timed out).
step() {
  local name="$1" cap="$2" log="$3"; shift 3
  local t=$(( $(left) - 20 )); (( t > cap )) && t=$cap
  if (( t < 5 )); then say "$name: skipped, no time left in the ${BUDGET}s budget"; printf '%s\tskipped (no time left)\t0\n' "$name" >> "$OUT/steps.tsv"; return 125; fi
  say "$name (timeout ${t}s)"
  local s=$(date +%s) rc=0
  timeout -k 5 "$t" "$@" > "$log" 2>&1 || rc=$?
  local d=$(( $(date +%s) - s )) status="ok"
  if (( rc == 124 || rc == 137 )); then status="timed out after ${t}s"; elif (( rc != 0 )); then status="failed (exit $rc)"; fi
  say "$name: $status in ${d}s (log: $(basename "$log"))"
  printf '%s\t%s\t%s\n' "$name" "$status" "$d" >> "$OUT/steps.tsv"
  return $rc
}

# unxz SRC DEST / untar_xz SRC DIR: xz where present, else Python's lzma (a GPU machine may lack xz-utils).
unxz() { if have xz; then xz -dc "$1" > "$2"; else python3 -c 'import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],"wb"))' "$1" "$2"; fi; }
untar_xz() { if have xz; then xz -dc "$1" | tar -xf - -C "$2"; else python3 -c 'import tarfile,sys; tarfile.open(sys.argv[1],"r:xz").extractall(sys.argv[2])' "$1" "$2"; fi; }

say "mars-lab GPU run ${GPU_SH_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo '(no git)')}$([[ $REHEARSAL == 1 ]] && echo ', CPU rehearsal') → $OUT"

# --- the machine: GPU, CUDA, Vulkan ------------------------------------------------------------------------------
GPU=0 VK_LOADER="" NV_ICD=""
{
  echo "## system"; uname -a; grep PRETTY_NAME /etc/os-release 2>/dev/null; echo "cpus: $(nproc)"; free -g 2>/dev/null | head -2
  echo; echo "## nvidia-smi"
  if have nvidia-smi && timeout 30 nvidia-smi; then
    timeout 30 nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv
  else echo "nvidia-smi: not found or failed"; fi
  echo; echo "## CUDA libraries (ldconfig -p)"
  ldcache | grep -E 'libcuda\.so|libcudart|libcudnn|libcublas\.' || echo "none in the linker cache"
  echo; echo "## Vulkan"
  ldcache | grep 'libvulkan.so.1' || echo "libvulkan.so.1: not in the linker cache"
  echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-} VK_ICD_FILENAMES=${VK_ICD_FILENAMES:-} VK_DRIVER_FILES=${VK_DRIVER_FILES:-}"
  for d in /etc/vulkan/icd.d /usr/share/vulkan/icd.d /usr/local/share/vulkan/icd.d; do ls -l "$d" 2>/dev/null; done
  for f in /etc/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json; do [[ -f $f ]] && { echo "$f:"; cat "$f"; }; done
  have vulkaninfo && timeout 30 vulkaninfo --summary 2>&1 | head -40
} > "$OUT/machine.txt" 2>&1
have nvidia-smi && timeout 30 nvidia-smi -L > /dev/null 2>&1 && GPU=1
VK_LOADER="$(ldcache | grep -m1 -o '/[^ ]*libvulkan\.so\.1$' || true)"
IFS=: read -ra dirs <<< "${LD_LIBRARY_PATH:-}"
for d in "${dirs[@]}"; do [[ -z "$VK_LOADER" && -n "$d" && -e "$d/libvulkan.so.1" ]] && VK_LOADER="$d/libvulkan.so.1"; done
IFS=: read -ra icds <<< "${VK_DRIVER_FILES:-${VK_ICD_FILENAMES:-}}"
for f in /etc/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json "${icds[@]}"; do [[ -f "$f" && "$(basename "$f")" == nvidia* ]] && NV_ICD="$f"; done
say "GPU (nvidia-smi): $([[ $GPU == 1 ]] && timeout 30 nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1 || echo 'none')"
say "Vulkan loader libvulkan.so.1: ${VK_LOADER:-not found}; NVIDIA Vulkan driver manifest: ${NV_ICD:-not found}"
if [[ -z "$VK_LOADER" || -z "$NV_ICD" ]]; then
  say "webgpu needs both (Dawn reaches the GPU through Vulkan); without them it will report no hardware adapter." \
      "In a container the NVIDIA runtime provides them only with NVIDIA_DRIVER_CAPABILITIES including 'graphics'."
fi
say "tensorflow backend: @tensorflow/tfjs-node-gpu is no dependency of mars-lab and not in the kit: its installer downloads" \
    "libtensorflow from outside the npm registry (and it wants CUDA 11.2 / cuDNN 8.1, no Hopper/Blackwell code). Not tried here."

# --- Node.js and node_modules from the kit ---------------------------------------------------------------------
KIT="$ROOT/bench/gpu-kit"
if [[ -f "$KIT/MANIFEST.json" ]]; then
  NODE_XZ="$(ls "$KIT"/node-v*-linux-x64.xz 2>/dev/null | head -1)"
  NODE_DIR="$ROOT/bench/.gpu-kit-node"
  mkdir -p "$NODE_DIR"
  if ! cmp -s "$KIT/MANIFEST.json" "$NODE_DIR/MANIFEST.json"; then
    say "unpacking $(basename "$NODE_XZ")"
    unxz "$NODE_XZ" "$NODE_DIR/node" && chmod +x "$NODE_DIR/node" || { say "could not unpack Node.js"; exit 1; }
    lock_sha="$(grep -o '"packageLockSha256": "[0-9a-f]*"' "$KIT/MANIFEST.json" | grep -o '[0-9a-f]\{64\}')"
    if [[ -e node_modules && ! -f node_modules/.mars-lab-gpu-kit ]]; then
      say "node_modules exists and is not from the kit: using it as it is"
    else
      say "unpacking node_modules.tar.xz"
      rm -rf node_modules && mkdir node_modules && untar_xz "$KIT/node_modules.tar.xz" . || { say "could not unpack node_modules"; exit 1; }
      touch node_modules/.mars-lab-gpu-kit
    fi
    [[ "$lock_sha" == "$(sha256sum package-lock.json | cut -d' ' -f1)" ]] ||
      say "warning: package-lock.json changed since the kit was made; rebuild it with bench/make-gpu-kit.sh if anything fails to load"
    cp "$KIT/MANIFEST.json" "$NODE_DIR/MANIFEST.json"
  fi
  export PATH="$NODE_DIR:$ROOT/node_modules/.bin:$PATH"
elif have node && [[ -d node_modules ]]; then
  say "no kit (bench/gpu-kit): using this machine's $(node --version) and node_modules"
  export PATH="$ROOT/node_modules/.bin:$PATH"
else
  say "no kit (bench/gpu-kit) and no Node.js here: build the kit with bench/make-gpu-kit.sh and carry bench/gpu-kit"
  exit 1
fi
say "node $(node --version) at $(command -v node); kit unpacked at +$(( $(date +%s) - START ))s"

# --- doctor: the ladder, then each GPU backend forced -----------------------------------------------------------
# doctor VARIANT ARGS…: JSON on stdout to doctor[-VARIANT].json, messages to its .log.
doctor() {
  local f="$OUT/doctor${1:+-$1}"; shift
  step "doctor${*:+ $*}" 60 "$f.log" sh -c 'exec node engine/bin/mars-lab.mjs doctor --json "$@" > "$0"' "$f.json" "$@"
}
doctor "" || FAILED=1
doctor webgpu --backend webgpu && WEBGPU=1 || WEBGPU=0
doctor tensorflow --backend tensorflow && TENSORFLOW=1 || TENSORFLOW=0
node -e 'const r=require(process.argv[1]); console.log(`chosen by the ladder: ${r.chosen}`); for (const a of r.attempts) console.log(`  ${a.backend} ${a.package}: ${a.status}: ${a.detail}`)' "$OUT/doctor.json" 2>/dev/null
(( WEBGPU )) || say "webgpu does not load: $(grep -m1 -o "is not available: .*" "$OUT/doctor-webgpu.log" | head -c 600)"

# --- the numerics tests, on every backend that loads --------------------------------------------------------------
EXPECT=""
[[ $REHEARSAL == 0 && -n "$VK_LOADER" && -n "$NV_ICD" ]] && EXPECT=webgpu
say "numerics tests$([[ -n $EXPECT ]] && echo " (webgpu expected: an NVIDIA Vulkan driver is present, so its absence fails)")"
step "numerics tests" 180 "$OUT/numerics.log" env MARS_LAB_EXPECT_BACKENDS="$EXPECT" \
  node node_modules/vitest/vitest.mjs run tests/unit/model/backends.test.ts --reporter=verbose --reporter=json --outputFile.json="$OUT/numerics.json" || FAILED=1
nocolor < "$OUT/numerics.log" | grep -E '^ *(✓|×|↓) ' | sed 's/^ */  /; s/ tests\/unit\/model\/backends.test.ts > [^>]* > / /'

# --- the bench's GPU part ---------------------------------------------------------------------------------------
BENCH_SCRIPT="$(node -p 'require("./package.json").scripts.bench')"
PARTS="${GPU_SH_BENCH_PARTS:-engine}" SIZES="${GPU_SH_SIZES:-tiny,small,medium}"
# bench BACKEND SIZE CAP EXTRA…: one size per process, so that a timeout loses that size only. Options that this
# version of the bench does not know (it is growing) are dropped and the run retried.
bench() {
  local b="$1" size="$2" cap="$3"; shift 3
  local opts=(--backend "$b" --sizes "$size" --json "$OUT/bench-$b-$size.json" --parts "$PARTS" --md "$OUT/bench-$b-$size.md" "$@")
  for _ in 1 2 3 4; do
    step "bench $b $size" "$cap" "$OUT/bench-$b-$size.log" bash -c "$BENCH_SCRIPT"' "$@"' bench "${opts[@]}"
    local rc=$?
    (( rc == 125 )) && return 0   # skipped: no time left (said above)
    local unknown="$(grep -m1 -o "Unknown option '--[a-z-]*'" "$OUT/bench-$b-$size.log" | grep -o -- '--[a-z-]*')"
    [[ $rc != 0 && -n "$unknown" ]] || return $rc
    say "the bench does not know $unknown: retrying without it"
    local kept=() i=0
    while (( i < ${#opts[@]} )); do
      if [[ "${opts[i]}" == "$unknown" ]]; then i=$(( i + 2 )); else kept+=("${opts[i]}"); i=$(( i + 1 )); fi
    done
    opts=("${kept[@]}")
  done
}
BENCHED=""
if (( REHEARSAL )); then
  say "CPU rehearsal: the bench runs on wasm, tiny only, one repeat: these are not GPU figures"
  bench wasm tiny 120 --repeats 1 --batch 4 --seq 16 --new-tokens 8 || FAILED=1
  BENCHED=wasm
elif (( WEBGPU )) && { grep -q '"status": "software-adapter"' "$OUT/doctor.json" || grep -q '(software, ' "$OUT/doctor-webgpu.json"; } && [[ -z "${GPU_SH_BENCH_SOFTWARE:-}" ]]; then
  say "webgpu loads only on a software adapter (see doctor.json): not benched (GPU_SH_BENCH_SOFTWARE=1 benches it anyway)"
elif (( WEBGPU )); then
  for s in tiny:70 small:110 medium:170; do
    [[ ",$SIZES," == *",${s%%:*},"* ]] && { bench webgpu "${s%%:*}" "${s##*:}" --repeats 5 || FAILED=1; }
  done
  BENCHED=webgpu
else
  say "no GPU backend loads here (see doctor-webgpu.json): the bench's GPU part is not run"
fi
if [[ -n "$BENCHED" ]]; then
  node -e '
    const fs = require("fs"); const [out, b] = process.argv.slice(1); const sizes = {};
    for (const f of fs.readdirSync(out)) { const m = f.match(new RegExp(`^bench-${b}-(\\w+)\\.json$`)); if (m) sizes[m[1]] = JSON.parse(fs.readFileSync(`${out}/${f}`, "utf8")); }
    fs.writeFileSync(`${out}/bench-${b}.json`, JSON.stringify({ backend: b, sizes }, null, 1));
    console.log(`bench-${b}.json: sizes ${Object.keys(sizes).join(", ") || "none"}`);' "$OUT" "$BENCHED"
fi

# --- summary ----------------------------------------------------------------------------------------------------
{
  echo "# mars-lab GPU run $(date -u +%Y-%m-%dT%H:%M:%SZ)$([[ $REHEARSAL == 1 ]] && echo ' (CPU rehearsal: no GPU figures)')"
  echo; echo "- commit: ${GPU_SH_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo "unknown (no git here and no GPU_SH_COMMIT; the kit was made at $(grep -o '"gitHead": "[^"]*"' "$KIT/MANIFEST.json" 2>/dev/null | cut -d'"' -f4))")}; node $(node --version)"
  echo "- GPU: $([[ $GPU == 1 ]] && timeout 30 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -1 || echo 'none (nvidia-smi absent or failed)')"
  echo "- Vulkan loader: ${VK_LOADER:-not found}; NVIDIA Vulkan manifest: ${NV_ICD:-not found}"
  echo "- webgpu: $( (( WEBGPU )) && node -p 'require(process.argv[1]).attempts.find(a=>a.status==="chosen").detail' "$OUT/doctor-webgpu.json" || grep -m1 -o "is not available: .*" "$OUT/doctor-webgpu.log" | sed 's/^is not available: //; s/ Run .npx mars-lab doctor.*//' || echo 'did not load')"
  echo "- tensorflow: $( (( TENSORFLOW )) && echo loads || echo 'not in the kit (tfjs-node-gpu is no dependency; it cannot be installed where the kit is made)')"
  echo; echo "| step | status | seconds |"; echo "|---|---|---|"
  awk -F'\t' '{ printf "| %s | %s | %s |\n", $1, $2, $3 }' "$OUT/steps.tsv"
  echo; echo "## numerics tests"; echo; echo '```'
  nocolor < "$OUT/numerics.log" | grep -E '^ *(✓|×|↓) |Tests ' | sed 's/^ *//; s/ tests\/unit\/model\/backends.test.ts > [^>]* > / /'; echo '```'
  for f in "$OUT"/bench-*-*.md; do [[ -f $f ]] && { echo; echo "## $(basename "$f" .md)"; echo; cat "$f"; }; done
  echo; echo "total: $(( $(date +%s) - START ))s of a ${BUDGET}s budget"
} > "$OUT/summary.md" 2>/dev/null
say "done in $(( $(date +%s) - START ))s: $OUT/summary.md$( (( FAILED )) && echo ' (some steps failed: see steps.tsv and their logs)')"
exit $FAILED
