# The peer of bench_unet: diffusers' UNetSpatioTemporalConditionModel in
# float32 on the CPU, from the same model folder and inputs, on the same
# number of threads.  Run by bench/bench-unet.sh when PEER_PYTHON is set:
#     python3 peer_unet.py MODEL_DIR IO.safetensors THREADS RUNS
import statistics
import sys
import time

import torch
from diffusers import UNetSpatioTemporalConditionModel
from safetensors.torch import load_file


def main():
    model_dir, io_path = sys.argv[1], sys.argv[2]
    threads, runs = int(sys.argv[3]), int(sys.argv[4])
    torch.set_num_threads(threads)
    unet = UNetSpatioTemporalConditionModel.from_pretrained(
        model_dir, torch_dtype=torch.float32).eval()
    io = load_file(io_path)
    args = (io["sample"], io["timestep"], io["encoder_hidden_states"])
    ids = io["added_time_ids"]
    times = []
    with torch.inference_mode():
        for i in range(runs + 1):       # the first call warms up
            t0 = time.perf_counter()
            out = unet(*args, added_time_ids=ids, return_dict=False)[0]
            if i > 0:
                times.append(time.perf_counter() - t0)
    if "out" in io:
        ref = io["out"]
        err = (out - ref).abs().max() / ref.abs().max()
        print("peer error vs golden: %.3g relative" % err.item())
    print("peer           : diffusers %s, torch %s, %d threads"
          % (__import__("diffusers").__version__, torch.__version__, threads))
    print("median_s: %.4f" % statistics.median(times))


if __name__ == "__main__":
    main()
