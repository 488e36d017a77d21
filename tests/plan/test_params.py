"""Parameter counts: exact, against transformers' own models built on the meta device."""

from __future__ import annotations

import pytest

from treino import catalog
from treino.errors import UnsupportedModelError
from treino.plan import model_from_config
from treino.plan.model import SUPPORTED_FAMILIES

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


def _hf_count(cfg: dict) -> int:
    fields = {k: v for k, v in cfg.items() if not k.startswith("treino_")}
    model_type = fields.pop("model_type")
    config = transformers.AutoConfig.for_model(model_type, **fields)
    auto = transformers.AutoModelForMaskedLM if model_type == "bert" else transformers.AutoModelForCausalLM
    with torch.device("meta"):
        model = auto.from_config(config)
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("name", catalog.model_names())
def test_preset_params_equal_transformers(name: str) -> None:
    cfg = catalog.model_config(name)
    assert catalog.model(name).params == _hf_count(cfg)


@pytest.mark.parametrize(
    "name,published",
    [
        # planner-formulas-and-data.md §0 and §B1 (meta-device builds), and the model cards.
        ("llama-2-7b", 6_738_415_616),
        ("llama-3-8b", 8_030_261_248),
        ("gpt2", 124_439_808),
        ("bert-base-uncased", 109_514_298),
        ("mixtral-8x7b", 46_702_792_704),
        ("llama-3.1-405b", 405_853_388_800),
    ],
)
def test_published_parameter_counts(name: str, published: int) -> None:
    assert catalog.model(name).params == published


def test_families_cover_the_issue() -> None:
    assert set(SUPPORTED_FAMILIES) == {
        "llama",
        "mistral",
        "mixtral",
        "qwen2",
        "gemma",
        "gemma2",
        "phi3",
        "gpt2",
        "gpt_neox",
        "bert",
        "qwen2_moe",
        "deepseek_v3",
    }


def test_qwen15_moe_a27b_parameter_count() -> None:
    """Qwen1.5-MoE-A2.7B (config.json on the Hugging Face Hub, Qwen/Qwen1.5-MoE-A2.7B): "14.3B parameters in
    total and 2.7B activated" (its model card). The count is exact against transformers' own build (meta device)."""
    cfg = {
        "model_type": "qwen2_moe",
        "hidden_size": 2048,
        "intermediate_size": 5632,
        "moe_intermediate_size": 1408,
        "shared_expert_intermediate_size": 5632,
        "num_hidden_layers": 24,
        "num_attention_heads": 16,
        "num_key_value_heads": 16,
        "num_experts": 60,
        "num_experts_per_tok": 4,
        "vocab_size": 151936,
        "max_position_embeddings": 8192,
        "tie_word_embeddings": False,
    }
    spec = model_from_config(cfg)
    assert round(spec.params / 1e9, 1) == 14.3
    assert round(spec.active_params / 1e9, 1) == 2.7
    torch = pytest.importorskip("torch")
    engine = pytest.importorskip("treino.trace.engine")
    with torch.device("meta"):
        model = engine.build_hf_model(cfg, precision="bf16-true", attention="sdpa")
    assert spec.params == sum(p.numel() for p in model.parameters())


def test_unsupported_family_names_supported_ones_and_trace() -> None:
    with pytest.raises(UnsupportedModelError) as err:
        model_from_config({"model_type": "t5", "d_model": 512})
    message = str(err.value)
    assert "t5" in message and "llama" in message and "gpt_neox" in message and "--method trace" in message


@pytest.mark.parametrize(
    "cfg,field",
    [
        (
            {
                "model_type": "llama",
                "hidden_size": 100,
                "num_attention_heads": 3,
                "num_hidden_layers": 2,
                "intermediate_size": 10,
                "vocab_size": 10,
            },
            "num_attention_heads (3) does not divide hidden_size (100)",
        ),
        (
            {
                "model_type": "llama",
                "hidden_size": 0,
                "num_attention_heads": 2,
                "num_hidden_layers": 2,
                "intermediate_size": 10,
                "vocab_size": 10,
            },
            "'hidden_size' must be positive",
        ),
        (
            {
                "model_type": "llama",
                "hidden_size": 64,
                "num_attention_heads": 2,
                "num_hidden_layers": 2,
                "vocab_size": 10,
            },
            "lacks 'intermediate_size'",
        ),
        (
            {
                "model_type": "llama",
                "hidden_size": "64",
                "num_attention_heads": 2,
                "num_hidden_layers": 2,
                "intermediate_size": 10,
                "vocab_size": 10,
            },
            "'hidden_size' must be an integer",
        ),
        (
            {
                "model_type": "llama",
                "hidden_size": 64,
                "num_attention_heads": 4,
                "num_key_value_heads": 3,
                "num_hidden_layers": 2,
                "intermediate_size": 10,
                "vocab_size": 10,
            },
            "num_key_value_heads (3) does not divide",
        ),
    ],
)
def test_bad_configs_name_the_field(cfg: dict, field: str) -> None:
    from treino.errors import PlanError

    with pytest.raises(PlanError, match=field.replace("(", r"\(").replace(")", r"\)")):
        model_from_config(cfg)
