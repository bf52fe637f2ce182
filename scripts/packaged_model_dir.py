"""Print the directory of a packaged pretrained model (smollm2, gemma3), converting its GGUF on first use.

    python scripts/packaged_model_dir.py gemma3 [override ...]     # e.g. paths.cache_dir=/big/disk/cache

The directory is a plain transformers checkpoint: pass it as model.clean= / model.contaminated= (make smollm2-run
uses SmolLM2's as both models of a pair) or as a reference model. Gemma's carries the Gemma Terms of Use.
"""

import sys

from contamlab.config import compose, model_store
from contamlab.errors import ContamlabError
from contamlab.models.packaged import PACKAGED

USAGE = f"usage: packaged_model_dir.py {{{','.join(PACKAGED)}}} [override ...]"


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in PACKAGED:
        print(USAGE, file=sys.stderr)
        return 2
    try:
        print(model_store(compose("evaluate", [f"model={argv[0]}", *argv[1:]])).base_source())
    except ContamlabError as err:
        print(f"contamlab: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
