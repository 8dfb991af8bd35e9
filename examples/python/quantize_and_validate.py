"""From a Hugging Face folder to a validated GPTQ Q4_K_M file, in the steps a notebook takes:
quantize with calibration text, evaluate the result against the original (KL divergence,
perplexity change, top-1 agreement), print the verdict, save the size/KLD plot.

usage: python quantize_and_validate.py HF_FOLDER CALIB.txt EVAL.txt OUT_DIR [--ctx N]
       [--calib-samples N] [--seq-len N]

Run by tests/cli_python.sh on the stories260K fixture; needs only the edgelm package."""

import argparse
import os

import edgelm


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("hf", help="Hugging Face folder (config.json, safetensors, tokenizer.json)")
    ap.add_argument("calib", help="calibration text: one sample per line, or edgelm calib's JSONL")
    ap.add_argument("text", help="evaluation text (at least 2 x --ctx tokens)")
    ap.add_argument("out", help="folder for the GGUF file and the plot")
    ap.add_argument("--ctx", type=int, default=512, help="tokens per evaluation chunk")
    ap.add_argument("--calib-samples", type=int, default=128, help="calibration samples used")
    ap.add_argument("--seq-len", type=int, default=512, help="tokens per calibration sample")
    a = ap.parse_args()

    # 1. GPTQ into llama-quantize's Q4_K_M recipe: every tensor's type by its rules
    gguf = os.path.join(a.out, "model-gptq-q4_k_m.gguf")
    q = edgelm.quantize(a.hf, gguf, type="q4_k_m", method="gptq", calib=a.calib,
                        calib_samples=a.calib_samples, seq_len=a.seq_len,
                        progress=lambda done, total, name: print(
                            f"\rquantize [{done}/{total}] {name:<12}", end="", flush=True))
    print(f"\n{gguf}: {q['bits_per_weight']:.2f} bits/weight, {q['compression']:.2f}x smaller, "
          f"{q['seconds']:.1f} s")

    # 2. against the original: the report of `edgelm eval --json`, and its plot
    svg = os.path.join(a.out, "size_vs_kld.svg")
    report = edgelm.evaluate(a.hf, [gguf], a.text, n_ctx=a.ctx, svg=svg)
    base, m = report["baseline"], report["models"][0]
    print(f"PPL {base['ppl']:.4f} -> {m['ppl']:.4f} ({m['ppl_change_pct']:+.2f}%), "
          f"KLD {m['kld_mean']:.5f} (p99 {m['kld_p99']:.4f}), top-1 {m['top1_pct']:.1f}%")
    print(f"verdict: {m['verdicts']['ppl']} (PPL change under "
          f"{report['thresholds']['ppl_change_pct']}% is excellent)")
    print(f"plot: {svg}")


if __name__ == "__main__":
    main()
