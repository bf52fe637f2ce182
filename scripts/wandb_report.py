"""Build (and with --save, upload) the W&B Report of a finished grid: one section per paper table and figure.

    wandb sync outputs/**/offline-run-*          # or: make sync  (cluster runs are logged offline)
    python scripts/wandb_report.py --entity ME --project contamlab --group eval-tiny-arith --save

Without --save it builds the report offline and prints its sections (no network needed).
"""

from __future__ import annotations

import argparse
import os

from contamlab.analysis.wandb_report import build_report, save_report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entity", default=os.environ.get("WANDB_ENTITY"), help="W&B entity (or WANDB_ENTITY)")
    parser.add_argument("--project", default=os.environ.get("WANDB_PROJECT", "contamlab"))
    parser.add_argument("--group", default="", help="restrict to one run group (one grid)")
    parser.add_argument("--title", default="contamlab: restoration and detection")
    parser.add_argument("--save", action="store_true", help="upload (needs WANDB_API_KEY and network)")
    args = parser.parse_args()
    if not args.entity:
        parser.error("--entity (or WANDB_ENTITY) is required")
    report = build_report(args.entity, args.project, args.title, args.group)
    for block in report.blocks:
        if type(block).__name__ == "H1":
            print(block.text)
    if args.save:
        print(f"saved: {save_report(report)}")


if __name__ == "__main__":
    main()
