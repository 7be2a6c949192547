# The peer of bench_unet: diffusers' UNetSpatioTemporalConditionModel in
# float32 on the CPU, from the same model folder and inputs, on the same
# number of threads.  Run by bench/bench-unet.sh when PEER_PYTHON is set:
#     python3 peer_unet.py MODEL_DIR IO.safetensors THREADS RUNS [B F H W]
# With PEER_DTYPE=bf16 the model and the inputs are bfloat16 (weights and
# activations; torch runs its CPU products through oneDNN, on the CPU's
# BF16 units where it has them), and the output is compared in float32
# with the io file's "out" (bench/bench-cpu.sh).
# With B F H W the inputs are made here (seeded) and written to
# IO.safetensors with the peer's output as "out", for bench_unet to time the
# same call and measure its difference from the peer.
import os
import statistics
import sys
import time

import torch
from diffusers import UNetSpatioTemporalConditionModel
from safetensors.torch import load_file, save_file


def main():
    model_dir, io_path = sys.argv[1], sys.argv[2]
    threads, runs = int(sys.argv[3]), int(sys.argv[4])
    torch.set_num_threads(threads)
    dtype = torch.bfloat16 if os.environ.get("PEER_DTYPE") == "bf16" else torch.float32
    unet = UNetSpatioTemporalConditionModel.from_pretrained(
        model_dir, torch_dtype=dtype).eval()
    if len(sys.argv) > 5:
        b, f, h, w = (int(x) for x in sys.argv[5:9])
        cfg = unet.config
        gen = torch.Generator().manual_seed(3)
        io = {"sample": torch.randn(b, f, cfg.in_channels, h, w, generator=gen),
              "timestep": torch.full((b,), 0.7),
              "encoder_hidden_states": torch.randn(b, 1, cfg.cross_attention_dim,
                                                   generator=gen),
              "added_time_ids": torch.tensor([[6.0, 127.0, 0.02]] * b)}
    else:
        io = load_file(io_path)
    args = (io["sample"].to(dtype), io["timestep"].to(dtype),
            io["encoder_hidden_states"].to(dtype))
    ids = io["added_time_ids"].to(dtype)
    times = []
    with torch.inference_mode():
        for i in range(runs + 1):       # the first call warms up
            t0 = time.perf_counter()
            out = unet(*args, added_time_ids=ids, return_dict=False)[0]
            if i > 0:
                times.append(time.perf_counter() - t0)
    out = out.float()
    if len(sys.argv) > 5:
        io["out"] = out.contiguous()
        save_file(io, io_path)
    elif "out" in io:
        ref = io["out"]
        err = (out - ref).abs().max() / ref.abs().max()
        print("peer error vs out: %.3g relative" % err.item())
    print("peer           : diffusers %s, torch %s, %d threads, %s"
          % (__import__("diffusers").__version__, torch.__version__, threads,
             "bfloat16" if dtype == torch.bfloat16 else "float32"))
    print("median_s: %.4f" % statistics.median(times))


if __name__ == "__main__":
    main()
