"""The audit of one released model on one benchmark, as services the audit job composes.

- :mod:`.models`: the audited model and its references, where each loads from, what is missing and the truth;
- :mod:`.nonmembers`: the items a membership score is compared with;
- :mod:`.readings`: each detector's readings, and the per-item scores behind a membership reading;
- :mod:`.mitigation`: the mitigated score (mean solve probability under the decoding strategies);
- :mod:`.error_rates`: each membership reading's false alarms and power, measured on the audited model.
"""
