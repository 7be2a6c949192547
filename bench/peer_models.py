# The peer of bench_model: diffusers' AutoencoderKLTemporalDecoder (decode)
# or transformers' CLIPVisionModelWithProjection (image embeds) in float32
# on the CPU, from the same model folder, on the same number of threads.
# Run by bench/bench-models.sh when PEER_PYTHON is set:
#     python3 peer_models.py vae|clip MODEL_DIR IO.safetensors THREADS RUNS N H W
# It makes the inputs (seeded: vae latents [N, 4, H, W], clip pixel values
# [N, 3, H, W]), times RUNS calls after one warm-up, and writes the inputs
# as "in" and its output as "out" to IO.safetensors for bench_model.
import statistics
import sys
import time

import torch
from safetensors.torch import save_file


def main():
    kind, model_dir, io_path = sys.argv[1], sys.argv[2], sys.argv[3]
    threads, runs = int(sys.argv[4]), int(sys.argv[5])
    n, h, w = (int(x) for x in sys.argv[6:9])
    torch.set_num_threads(threads)
    gen = torch.Generator().manual_seed(5)
    if kind == "vae":
        from diffusers import AutoencoderKLTemporalDecoder
        model = AutoencoderKLTemporalDecoder.from_pretrained(
            model_dir, torch_dtype=torch.float32).eval()
        x = torch.randn(n, model.config.latent_channels, h, w, generator=gen)

        def call():
            return model.decode(x, num_frames=n).sample
        peer = "diffusers %s" % __import__("diffusers").__version__
    else:
        from transformers import CLIPVisionModelWithProjection
        model = CLIPVisionModelWithProjection.from_pretrained(
            model_dir, torch_dtype=torch.float32).eval()
        x = torch.randn(n, 3, h, w, generator=gen)

        def call():
            return model(pixel_values=x).image_embeds
        peer = "transformers %s" % __import__("transformers").__version__
    times = []
    with torch.inference_mode():
        for i in range(runs + 1):       # the first call warms up
            t0 = time.perf_counter()
            out = call()
            if i > 0:
                times.append(time.perf_counter() - t0)
    save_file({"in": x.contiguous(), "out": out.contiguous()}, io_path)
    print("peer           : %s, torch %s, %d threads"
          % (peer, torch.__version__, threads))
    print("median_s: %.4f" % statistics.median(times))


if __name__ == "__main__":
    main()
