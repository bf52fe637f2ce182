"""Studies: commands that run or gather a whole experiment and write its committed artifacts under ``results/``.

- :mod:`.evidence`: the evidence study (``make evidence``): sham controls, the dose curve, independent seeds.
- :mod:`.blind`: the blind baseline of a benchmark against its non-members, without any model.

They sit above the audit and the services (they read configs, the model store and the audit's non-members) and
below nothing but the entry points.
"""
