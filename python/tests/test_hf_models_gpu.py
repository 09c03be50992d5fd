"""HuggingFace transformers' GPT-2 and Llama through
torch.compile(backend="kfuse"), built from small configs with random
weights (nothing is downloaded): logits against eager PyTorch, what kfuse
left to PyTorch, and a new sequence length compiled by kfuse again rather
than run by PyTorch. Skips, saying why, without torch, a GPU or
transformers. bench/hf_models.py times the full-sized models."""

import pytest

torch = pytest.importorskip("torch", reason="no torch here")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU here", allow_module_level=True)
transformers = pytest.importorskip("transformers",
                                   reason="no transformers here")

import kfuse.torch as ktorch  # noqa: E402

# Left to PyTorch by design: the module-usage logging call Dynamo keeps
# in the graph (no tensor in or out).
_EXPECTED_FALLBACKS = ("_log_api_usage_once",)


def small_model(kind):
    """Two layers, head dim 64, bf16, eval mode, no KV cache."""
    torch.manual_seed(0)
    if kind == "gpt2":
        config = transformers.GPT2Config(n_embd=256, n_layer=2, n_head=4,
                                         n_positions=512, vocab_size=4096)
        model = transformers.GPT2LMHeadModel(config)
    else:
        config = transformers.LlamaConfig(
            hidden_size=512, num_attention_heads=8, num_key_value_heads=2,
            intermediate_size=1408, num_hidden_layers=2, vocab_size=4096,
            max_position_embeddings=512)
        model = transformers.LlamaForCausalLM(config)
    config.use_cache = False
    return model.to("cuda", torch.bfloat16).eval()


def relative_error(actual, expected):
    assert not torch.isnan(actual).any()
    return ((actual.double() - expected.double()).abs().max() /
            expected.double().abs().max()).item()


@pytest.mark.parametrize("kind", ["gpt2", "llama"])
def test_hf_model_matches_eager_at_two_sequence_lengths(kind):
    model = small_model(kind)
    torch._dynamo.reset()
    report = ktorch.backend_report
    graphs, parts = report["graphs"], report["compiled"]
    fallbacks = len(report["fallbacks"])
    forward = torch.compile(model, backend="kfuse")
    # The second length is new to Dynamo and no multiple of a tile.
    for seq in (128, 200):
        ids = torch.randint(0, model.config.vocab_size, (2, seq),
                            device="cuda")
        with torch.no_grad():
            expected = model(ids, use_cache=False).logits
            got = forward(ids, use_cache=False).logits
        assert got.shape == expected.shape
        assert relative_error(got, expected) < 3e-2, f"{kind} S={seq}"
    # Dynamo gave the backend a graph a length, each ran kfuse parts, and
    # nothing but the logging call was left to PyTorch.
    assert report["graphs"] >= graphs + 2, report
    assert report["compiled"] >= parts + 2, report
    left = [why for why in report["fallbacks"][fallbacks:]
            if not any(name in why for name in _EXPECTED_FALLBACKS)]
    assert not left, "\n".join(left)
