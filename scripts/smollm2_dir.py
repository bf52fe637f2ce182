"""Print the directory of the packaged SmolLM2-135M-Instruct, converting its GGUF on first use.

    python scripts/smollm2_dir.py [override ...]     # e.g. paths.cache_dir=/big/disk/cache

The same as ``python scripts/packaged_model_dir.py smollm2 [override ...]`` (make smollm2-run calls this one).
"""

import sys

from packaged_model_dir import main

if __name__ == "__main__":
    sys.exit(main(["smollm2", *sys.argv[1:]]))
