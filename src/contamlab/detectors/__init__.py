"""Contamination detectors (one module per method) and their evaluation.

- :mod:`~contamlab.detectors.codec`: CoDeC, confidence with vs without in-context samples (Zawalski et al. 2025).
- :mod:`~contamlab.detectors.benbench`: BenBench perplexity / n-gram accuracy vs paraphrased references (Xu et al.
  2024), with :mod:`~contamlab.detectors.paraphrase` for the references.
- :mod:`~contamlab.detectors.loss`, :mod:`~contamlab.detectors.zlib`, :mod:`~contamlab.detectors.mink`,
  :mod:`~contamlab.detectors.minkpp`: membership-inference baselines sharing one forward pass
  (:mod:`~contamlab.detectors.membership`, :mod:`~contamlab.detectors.scoring`).
- :mod:`~contamlab.detectors.cdd`: CDD output peakedness (Dong et al. 2024).

Their evaluation (AUROC, TPR@5%FPR) is in :mod:`contamlab.metrics.roc`, the report's detector table in
:mod:`contamlab.analysis.detectors`. A detector imports ``metrics``, ``data``, ``models``, ``io``, ``errors`` and
the decoding helpers it shares (token edit distance); never ``training``, ``analysis`` or the jobs.
"""

from contamlab.detectors.base import DetectionContext, Detector, DetectorOutput

__all__ = ["DetectionContext", "Detector", "DetectorOutput"]
