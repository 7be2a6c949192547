#!/usr/bin/env python3
"""Reads svdpipe's WebDataset shards with the `webdataset` package and
checks each sample against a run of the same spec with output.format: files.

    wds_check.py FILES_DIR SHARD.tar [SHARD.tar ...]

For every sample the reader yields: KEY.mp4 and KEY.latents.safetensors are
the bytes of FILES_DIR/KEY/video.mp4 and latents.safetensors, KEY.json
decodes (the package's default JSON decoder) to FILES_DIR/KEY/sample.json
less its "timings" and "cpu", and each KEY.frame_NNNN.png decodes (the
package's image decoder) to the pixels of FILES_DIR/KEY/frame_NNNN.png.
Exit 0 when every sample of FILES_DIR was read once and matched; 77 when
the package, or Pillow and NumPy for its image decoder, is missing (the test
harness's skip); 1 otherwise.
"""
import io
import json
import os
import sys

try:
    import webdataset as wds
except ImportError:
    print("webdataset is not installed: nothing checked", file=sys.stderr)
    sys.exit(77)
try:
    # the package's image decoder ("rgb8") needs Pillow and NumPy
    from PIL import Image  # noqa: F401
    import numpy  # noqa: F401
except ImportError:
    print("Pillow or NumPy is not installed (webdataset's image decoder needs "
          "them): nothing checked", file=sys.stderr)
    sys.exit(77)


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    files, shards = argv[1], argv[2:]
    bad, seen = 0, []
    raw = wds.WebDataset(shards, shardshuffle=False)
    decoded = wds.WebDataset(shards, shardshuffle=False).decode("rgb8")
    for sample, dec in zip(raw, decoded):
        key = sample["__key__"]
        seen.append(key)
        folder = os.path.join(files, key)
        for ext, name in (("mp4", "video.mp4"),
                          ("latents.safetensors", "latents.safetensors")):
            path = os.path.join(folder, name)
            if not os.path.exists(path) and ext == "mp4":
                continue
            with open(path, "rb") as f:
                if sample.get(ext) != f.read():
                    print(f"{key}.{ext}: not the bytes of {path}")
                    bad += 1
        with open(os.path.join(folder, "sample.json")) as f:
            want = json.load(f)
        want.pop("timings", None)
        want.pop("cpu", None)
        if dec["json"] != want:
            print(f"{key}.json: not {folder}/sample.json less timings and cpu")
            bad += 1
        frames = sorted(k for k in dec if k.startswith("frame_"))
        for k in frames:
            try:
                from PIL import Image
                import numpy as np
            except ImportError:
                break
            want_px = np.asarray(Image.open(os.path.join(folder, k)).convert("RGB"))
            if not np.array_equal(dec[k], want_px):
                print(f"{key}.{k}: other pixels than {folder}/{k}")
                bad += 1
    expected = sorted(d for d in os.listdir(files)
                      if os.path.exists(os.path.join(files, d, "sample.json")))
    if sorted(seen) != expected:
        print(f"read {len(seen)} samples {sorted(seen)}, the files run has {expected}")
        bad += 1
    print(f"{len(seen)} samples from {len(shards)} shards: "
          f"{'all match' if bad == 0 else f'{bad} mismatches'}")
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
