"""Studies: commands that run or gather a whole experiment and write its committed artifacts under ``results/``.

- :mod:`.evidence`: the evidence study (``make evidence``): sham controls, the dose curve, independent seeds.
- :mod:`.restoration`: RailCap against Identity and the noise floor on SmolLM2 at independent seeds.
- :mod:`.shift`: the shift null: how often each membership reading flags a model that saw nothing, per shift.
- :mod:`.reproduce`: the default world's study (``make reproduce``): Tables 1–4, Figures 1–2, the detectors.
- :mod:`.blind`: the blind baseline of a benchmark against its non-members, without any model.
- :mod:`.gsm8k_audit`: the packaged models audited on GSM8K against each non-member choice.
- :mod:`.meta_audit`: the default world's simulated models audited as if released, verdicts against the truth.
- :mod:`.blocks`: the generated blocks of a hand-written page, between their markers.
- :mod:`.run_files`: a run's job files kept as an artifact folder (the copy step the studies share).
- :mod:`.pages`: every generated page and block of the docs again, from the artifacts (``make pages``).

They sit above the audit and the services (they read configs, the model store and the audit's non-members) and
below nothing but the entry points.
"""
