"""Benchmark Transparency Card for a trained model, or the blank template.

python scripts/transparency_card.py outputs/models/tiny/arith/contaminated-arith-<hash> [--out DIR]
    [--results outputs/evaluate/runs/<run>/results.json]
python scripts/transparency_card.py --blank [--out docs]
"""

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from contamlab.analysis.transparency_card import blank_card, card_from_stage, write_card  # noqa: E402
from contamlab.errors import ContamlabError  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("stage_dir", nargs="?", help="a train.py stage directory (clean-* or contaminated-*)")
    parser.add_argument("--out", help="output directory (default: the stage directory)")
    parser.add_argument("--results", help="an evaluate.py results.json, for the evaluation details")
    parser.add_argument("--blank", action="store_true", help="write the blank template instead")
    args = parser.parse_args(argv)
    try:
        if args.blank:
            md, js = write_card(blank_card(), args.out or ".", "transparency_card_template")
        else:
            if not args.stage_dir:
                parser.error("give a stage directory or --blank")
            evaluation = json.loads(Path(args.results).read_text())["config"] if args.results else None
            card = card_from_stage(args.stage_dir, evaluation)
            md, js = write_card(card, args.out or args.stage_dir)
    except ContamlabError as err:
        print(f"contamlab: error: {err}", file=sys.stderr)
        return 2
    print(f"wrote {md} and {js}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
