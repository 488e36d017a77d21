"""Catalogs as data: GPUs (data/v1/gpus.csv), model presets (models/*.json), offers, sites and the BRL/USD
rate (data/v1/offers.csv, sites.csv, fx.csv), each row sourced and dated."""

from treino.catalog.loader import gpu, gpus, model, model_config, model_names

__all__ = ["gpu", "gpus", "model", "model_config", "model_names"]
# Offers, sites and exchange rates: treino.catalog.offers (imported on demand; it loads YAML support).
