#!/usr/bin/env bash
# Rehearse bench/gpu.sh here as the GPU machine will run it: no Node.js, nothing but the working tree and the kit.
#
#   bench/rehearse-gpu.sh OUT_DIR [NAME=VALUE…] [--as-gpu]
#
# Copies what the device tool copies (tracked files and untracked files git does not ignore) plus bench/gpu-kit into
# a fresh temporary folder, makes a PATH of this machine's /usr/local/bin, /usr/bin, /bin and sbin without node, nodejs,
# npm, npx and corepack (and without any command named in REHEARSAL_HIDE, e.g. REHEARSAL_HIDE=xz to use gpu.sh's
# Python fallback), and runs gpu.sh there with an otherwise empty environment (NAME=VALUE arguments are added to it,
# e.g. VK_ICD_FILENAMES=… to try webgpu on a software Vulkan driver). gpu.sh gets --cpu-rehearsal unless --as-gpu is
# given (then it benches whatever GPU backend loads, e.g. webgpu on that software driver, under its timeouts).
# The copy is removed afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:?usage: bench/rehearse-gpu.sh OUT_DIR [NAME=VALUE…] [--as-gpu]}"; shift
ENVS=() ARGS=(--cpu-rehearsal)
for a in "$@"; do
  case "$a" in
    --as-gpu) ARGS=() ;;
    *=*) ENVS+=("$a") ;;
    *) echo "rehearse-gpu: unknown argument '$a'" >&2; exit 2 ;;
  esac
done
[[ -f bench/gpu-kit/MANIFEST.json ]] || { echo "rehearse-gpu: no kit; build it with bench/make-gpu-kit.sh" >&2; exit 1; }
mkdir -p "$OUT" && OUT="$(cd "$OUT" && pwd)"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/mars-lab-gpu-rehearsal.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/repo/bench" "$WORK/bin" "$WORK/home"
git ls-files -z --cached --others --exclude-standard | tar --null --ignore-failed-read -cf - -T - 2>/dev/null | tar -xf - -C "$WORK/repo"
cp -r bench/gpu-kit "$WORK/repo/bench/gpu-kit"
echo "rehearse-gpu: working tree copy $(du -sm "$WORK/repo" | cut -f1) MiB (kit included) in $WORK/repo"

hide=" node nodejs npm npx corepack ${REHEARSAL_HIDE:-} "
for d in /usr/local/bin /usr/bin /bin /usr/sbin /sbin; do
  for f in "$d"/*; do
    n="$(basename "$f")"
    [[ "$hide" == *" $n "* || -e "$WORK/bin/$n" ]] || ln -s "$f" "$WORK/bin/$n"
  done
done
if PATH="$WORK/bin" command -v node >/dev/null; then echo "rehearse-gpu: node is still on the stripped PATH" >&2; exit 1; fi
echo "rehearse-gpu: PATH=$WORK/bin (no node, npm, npx${REHEARSAL_HIDE:+, $REHEARSAL_HIDE}); running gpu.sh ${ARGS[*]:-}${ENVS[*]:+ with ${ENVS[*]}}"

rc=0
env -i HOME="$WORK/home" PATH="$WORK/bin" TMPDIR="$WORK" LANG=C.UTF-8 ${ENVS[@]+"${ENVS[@]}"} \
  bash "$WORK/repo/bench/gpu.sh" "$OUT" ${ARGS[@]+"${ARGS[@]}"} || rc=$?
echo "rehearse-gpu: gpu.sh exited $rc; its output is in $OUT"
exit $rc
