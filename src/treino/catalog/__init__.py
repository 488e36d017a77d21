"""Catalogs as data: GPUs (data/v1/gpus.csv) and model presets (models/*.json), each row sourced and dated."""

from treino.catalog.loader import gpu, gpus, model, model_config, model_names

__all__ = ["gpu", "gpus", "model", "model_config", "model_names"]
