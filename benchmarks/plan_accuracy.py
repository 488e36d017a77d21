"""Superseded by benchmarks/kernel_accuracy.py, which measures every family x precision x attention x
checkpointing x dropout against issue 18's target (median <= 3 %, max <= 10 %); this runs it with the same
arguments, e.g.

    python benchmarks/plan_accuracy.py [--quick] [family ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kernel_accuracy import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
