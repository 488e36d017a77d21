"""Exact memory measurement of real training steps with PyTorch's MemTracker.

Needs the optional extras (`pip install 'treino[torch]'`). Used by `treino plan train --method trace`
(on fake tensors: nothing allocated, any model size) and by the planner's accuracy tests (on real CPU
tensors). Nothing in `treino.plan` imports this package.
"""
