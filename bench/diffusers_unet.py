# diffusers' UNetSpatioTemporalConditionModel in fp16 on the GPU, from the
# config and random weights of `svdtool init` (diffusers layout), at the size
# bench/gpu-check.sh times svdpipe: batch 2, 25 frames, 72x128 latents.
# Run only by bench/gpu-check.sh:  python3 diffusers_unet.py UNET_DIR RUNS
import statistics
import sys
import time

import torch
from diffusers import UNetSpatioTemporalConditionModel


def main():
    unet_dir, runs = sys.argv[1], int(sys.argv[2])
    dev = torch.device("cuda")
    unet = UNetSpatioTemporalConditionModel.from_pretrained(
        unet_dir, torch_dtype=torch.float16).to(dev).eval()
    cfg = unet.config
    gen = torch.Generator(device="cpu").manual_seed(1)
    sample = torch.randn(2, 25, cfg.in_channels, 72, 128, generator=gen)
    ehs = torch.randn(2, 1, cfg.cross_attention_dim, generator=gen)
    ids = torch.tensor([[6.0, 127.0, 0.02]] * 2)
    sample, ehs, ids = (x.to(dev, torch.float16) for x in (sample, ehs, ids))
    t = torch.tensor([0.7] * 2, device=dev)
    times = []
    torch.cuda.reset_peak_memory_stats()
    with torch.inference_mode():
        for i in range(runs + 1):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            unet(sample, t, ehs, added_time_ids=ids, return_dict=False)
            torch.cuda.synchronize()
            if i > 0:
                times.append(time.perf_counter() - t0)
    print("diffusers: %s, torch %s" % (torch.cuda.get_device_name(), torch.__version__))
    print("median_s: %.4f" % statistics.median(times))
    print("peak_bytes: %d" % torch.cuda.max_memory_allocated())


if __name__ == "__main__":
    main()
