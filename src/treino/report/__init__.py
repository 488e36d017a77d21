"""Reports: the planner's answers rendered as self-contained files (no network, no CDN).

write_recommendation_report(path, model, recommendation, candidates, fx, tokens, seq_len) -> Path

Rendering only: every number comes from treino.plan; matplotlib is imported inside the functions that
draw, so importing this package (or running `treino plan train`) does not load it.
"""

from __future__ import annotations

from treino.report.html import write_recommendation_report

__all__ = ["write_recommendation_report"]
