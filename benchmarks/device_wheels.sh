#!/usr/bin/env bash
# Run HERE (where PyPI is reachable), before a device run: downloads the wheels of the Python packages that the
# device machine (the device tool's nvidia-h200 image: Python 3.12, torch 2.11, transformers 5.17) lacks or has in
# another version, into benchmarks/build/wheels: ignored by .gitignore's `build/`, so never committed, and named in
# the run's `carry`. benchmarks/device_check.sh installs them there with pip --target /tmp/site.
#   pydantic (+ pydantic-core, annotated-types, typing-inspection, typing-extensions >= 4.16): treino's catalog
#     imports it and the image has none (without it every stage fails);
#   transformers: this checkout's pin (Makefile, the version the CPU measurements were made with) instead of the
#     image's 5.17; device_check.sh drops it again, and uses the image's, if it does not import there;
#   torchao 0.18.0: FP8 (benchmarks/fp8_check.py); built against torch 2.11, the image's torch.
# About 20 MB in all (the working tree that travels may hold 64 MiB).
set -euo pipefail
cd "$(dirname "$0")/.."
dest=benchmarks/build/wheels
py=${PYTHON:-.venv/bin/python}
version() { "$py" -c 'import sys; from importlib.metadata import version; print(version(sys.argv[1]))' "$1"; }
pins=(torchao==0.18.0)
for name in pydantic pydantic_core annotated_types typing_inspection typing_extensions transformers; do
  pins+=("$name==$(version "$name")")
done
rm -rf "$dest"  # one version of each: two stop the whole install there
mkdir -p "$dest"
platforms=()
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_24_x86_64 manylinux_2_17_x86_64 \
  manylinux2014_x86_64 manylinux1_x86_64; do
  platforms+=(--platform "$p")
done
"$py" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  "${platforms[@]}" -d "$dest" "${pins[@]}"
ls -l "$dest"
du -sh "$dest"
