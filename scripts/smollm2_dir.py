"""Print the directory of the packaged SmolLM2-135M-Instruct, converting its GGUF on first use.

    python scripts/smollm2_dir.py [override ...]     # e.g. paths.cache_dir=/big/disk/cache

The directory is a plain transformers checkpoint: pass it as model.clean= / model.contaminated= (make smollm2-run
uses it as both models of a pair) or as a reference model.
"""

import sys

from contamlab.config import compose
from contamlab.errors import ContamlabError
from contamlab.jobs.common import model_store


def main(argv: list[str]) -> int:
    try:
        print(model_store(compose("evaluate", ["model=smollm2", *argv])).base_source())
    except ContamlabError as err:
        print(f"contamlab: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
