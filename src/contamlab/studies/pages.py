"""Every generated page and block of the docs, from the committed artifacts under ``results/``: one command.

    python -m contamlab.studies.pages          # make pages

Each study writes its own (``tables`` of :mod:`.evidence`, :mod:`.restoration`, :mod:`.shift`, :mod:`.reproduce`,
:mod:`.gsm8k_audit` and :mod:`.meta_audit`); this runs them all, so that after a change of wording or format every
page and every generated block of README.md, docs/results.md, docs/audit.md and docs/results_audit.md agrees with the
artifacts again. The tests of each study fail when a page differs from what its artifacts give.
"""

from __future__ import annotations

from contamlab.studies import evidence, gsm8k_audit, meta_audit, reproduce, restoration, shift


def main() -> None:
    """Regenerate every page and block, printing each file written."""
    for name, write, out in (
        ("evidence", evidence.tables, f"{evidence.PAGE}, its figure, README.md"),
        ("restoration", restoration.tables, f"{restoration.PAGE}, README.md"),
        ("shift", shift.tables, str(shift.PAGE)),
        ("reproduce", reproduce.tables, f"{reproduce.RESULTS}, README.md"),
        ("gsm8k_audit", gsm8k_audit.tables, str(gsm8k_audit.AUDIT_PAGE)),
        ("meta_audit", meta_audit.tables, str(meta_audit.PAGE)),
    ):
        write()
        print(f"{name}: {out}")


if __name__ == "__main__":
    main()
