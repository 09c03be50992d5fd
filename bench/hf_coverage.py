"""How far torch.compile(backend="kfuse") reaches across HuggingFace model
families: small models built from a config with random weights (nothing
downloaded), each run in eager PyTorch and through kfuse on one GPU.

    python3 bench/hf_coverage.py [--only llama,bert] [--dtype float32]
                                 [--no-train]

Per family: the logits' relative error against eager (inference, no_grad),
then one training step's loss and the largest relative error of the
parameters' gradients against eager's (dropout off in both, each
gradient's error relative to its largest value or to a thousandth of the
model's largest gradient, whichever is larger); how many graphs Dynamo gave kfuse,
how many parts kfuse ran, and the ops it left to PyTorch (each reason
once). A family that raises is reported with its error and the rest go
on. This is a map of reach, not a benchmark: nothing is timed.
"""

import argparse
import collections
import pathlib
import sys
import traceback

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] /
                       "python"))
import kfuse.torch as ktorch  # noqa: E402

# Small shapes every family accepts: 2 layers, 4 heads of 64.
HIDDEN, HEADS, LAYERS, FFN, VOCAB = 256, 4, 2, 512, 1024
COMMON = dict(hidden_size=HIDDEN, num_attention_heads=HEADS,
              num_hidden_layers=LAYERS, intermediate_size=FFN,
              vocab_size=VOCAB)

# family: (config class, model class, config arguments). Decoder-only LMs
# take input ids and labels; the encoder (BERT) masked-LM labels; T5 its
# labels as the decoder's targets.
FAMILIES = {
    "gpt2": ("GPT2Config", "GPT2LMHeadModel",
             dict(n_embd=HIDDEN, n_head=HEADS, n_layer=LAYERS,
                  vocab_size=VOCAB)),
    "llama": ("LlamaConfig", "LlamaForCausalLM",
              dict(COMMON, num_key_value_heads=2)),
    "mistral": ("MistralConfig", "MistralForCausalLM",
                dict(COMMON, num_key_value_heads=2, sliding_window=64)),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM",
              dict(COMMON, num_key_value_heads=2)),
    "qwen3": ("Qwen3Config", "Qwen3ForCausalLM",
              dict(COMMON, num_key_value_heads=2, head_dim=64)),
    "gemma": ("GemmaConfig", "GemmaForCausalLM",
              dict(COMMON, num_key_value_heads=1, head_dim=64)),
    "phi3": ("Phi3Config", "Phi3ForCausalLM",
             dict(COMMON, num_key_value_heads=HEADS, pad_token_id=0,
                  bos_token_id=1, eos_token_id=2)),
    "gpt_neox": ("GPTNeoXConfig", "GPTNeoXForCausalLM", dict(COMMON)),
    "opt": ("OPTConfig", "OPTForCausalLM",
            dict(hidden_size=HIDDEN, num_attention_heads=HEADS,
                 num_hidden_layers=LAYERS, ffn_dim=FFN, vocab_size=VOCAB,
                 word_embed_proj_dim=HIDDEN)),
    "bert": ("BertConfig", "BertForMaskedLM", dict(COMMON)),
    "t5": ("T5Config", "T5ForConditionalGeneration",
           dict(d_model=HIDDEN, d_kv=HIDDEN // HEADS, d_ff=FFN,
                num_heads=HEADS, num_layers=LAYERS, vocab_size=VOCAB,
                decoder_start_token_id=0, pad_token_id=0)),
}


def build(family, dtype):
    import transformers as tf
    config_class, model_class, arguments = FAMILIES[family]
    config = getattr(tf, config_class)(**arguments)
    config.use_cache = False
    # Dropout would draw different masks in eager and in kfuse (modules
    # and F.dropout calls alike).
    for name in ("dropout", "attention_dropout", "hidden_dropout",
                 "activation_dropout", "attn_pdrop", "resid_pdrop",
                 "embd_pdrop", "hidden_dropout_prob", "dropout_rate",
                 "attention_probs_dropout_prob", "classifier_dropout"):
        if getattr(config, name, None):
            setattr(config, name, 0.0)
    torch.manual_seed(0)
    model = getattr(tf, model_class)(config)
    return model.to("cuda", dtype)


def relative_error(got, expected, floor=1e-30):
    """The largest difference over the largest expected magnitude, or
    `floor` where that is smaller (a gradient that is zero in exact
    arithmetic, such as a key bias's under softmax, is rounding noise)."""
    got, expected = got.double(), expected.double()
    if not torch.isfinite(got).all():
        return float("nan")
    scale = expected.abs().max().clamp_min(floor)
    return ((got - expected).abs().max() / scale).item()


def batch(family, batch=2, seq=128):
    generator = torch.Generator().manual_seed(1)
    ids = torch.randint(0, VOCAB, (batch, seq), generator=generator)
    return ids.cuda(), ids.clone().cuda()


def forward(model, ids, labels=None):
    kwargs = {"labels": labels} if labels is not None else {}
    if model.config.model_type == "t5" and labels is None:
        kwargs["decoder_input_ids"] = ids
    return model(input_ids=ids, **kwargs)


def report_delta(before):
    """What the backend did since `before` (a copy of backend_report)."""
    now = ktorch.backend_report
    reasons = collections.Counter(
        str(r)[:140] for r in now["fallbacks"][len(before["fallbacks"]):])
    return (now["graphs"] - before["graphs"],
            now["compiled"] - before["compiled"], reasons)


def snapshot():
    report = ktorch.backend_report
    return dict(report, fallbacks=list(report["fallbacks"]))


def inference(model, ids):
    torch._dynamo.reset()
    model.eval()
    with torch.no_grad():
        expected = forward(model, ids).logits
        compiled = torch.compile(model, backend="kfuse")
        before = snapshot()
        got = forward(compiled, ids).logits
        torch.cuda.synchronize()
    return relative_error(got, expected), report_delta(before)


def gradients(model):
    return {name: p.grad.detach().clone()
            for name, p in model.named_parameters() if p.grad is not None}


def training(model, ids, labels):
    torch._dynamo.reset()
    model.train()
    model.zero_grad(set_to_none=True)
    loss = forward(model, ids, labels).loss
    loss.backward()
    expected_loss, expected = loss.item(), gradients(model)
    model.zero_grad(set_to_none=True)
    compiled = torch.compile(model, backend="kfuse")
    before = snapshot()
    loss = forward(compiled, ids, labels).loss
    loss.backward()
    torch.cuda.synchronize()
    got = gradients(model)
    missing = sorted(set(expected) - set(got))
    floor = 1e-3 * max(g.abs().max().item() for g in expected.values())
    worst = max((relative_error(got[n], expected[n], floor), n)
                for n in expected if n in got)
    loss_error = abs(loss.item() - expected_loss) / abs(expected_loss)
    return loss_error, worst, missing, report_delta(before)


def describe(delta):
    graphs, parts, reasons = delta
    lines = [f"    {graphs} graphs, {parts} kfuse parts, "
             f"{sum(reasons.values())} nodes left to PyTorch"]
    for reason, count in reasons.most_common(12):
        lines.append(f"      {count:3d}x {reason}")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(FAMILIES))
    parser.add_argument("--dtype", default="float32",
                        choices=["float32", "bfloat16"])
    parser.add_argument("--no-train", action="store_true")
    args = parser.parse_args()
    dtype = getattr(torch, args.dtype)
    rows = []
    for family in args.only.split(","):
        print(f"== {family}", flush=True)
        try:
            model = build(family, dtype)
            ids, labels = batch(family)
            error, delta = inference(model, ids)
            print(f"  inference: logits rel. error {error:.2e}")
            print(describe(delta), flush=True)
            row = [family, f"{error:.1e}", str(delta[1]),
                   str(sum(delta[2].values()))]
            if not args.no_train:
                loss_error, (grad_error, name), missing, delta = training(
                    model, ids, labels)
                print(f"  training: loss rel. error {loss_error:.2e}, "
                      f"worst gradient {grad_error:.2e} ({name}), "
                      f"{len(missing)} gradients missing")
                print(describe(delta), flush=True)
                row += [f"{loss_error:.1e}", f"{grad_error:.1e}",
                        str(delta[1]), str(sum(delta[2].values()))]
            rows.append(row)
        except Exception as e:  # a map of reach: report and go on
            traceback.print_exc(limit=4)
            rows.append([family, "error: " + str(e).splitlines()[0][:90]])
        # A family that failed inside a no_grad region leaves it behind.
        torch.set_grad_enabled(True)
        torch.cuda.empty_cache()
    header = ["family", "logits err", "parts", "to torch"]
    if not args.no_train:
        header += ["loss err", "grad err", "train parts", "to torch"]
    print("\n| " + " | ".join(header) + " |")
    print("|" + " --- |" * len(header))
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
