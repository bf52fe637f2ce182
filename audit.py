"""Audit one model on one benchmark: a verdict per detector. See configs/audit.yaml."""

import hydra
from omegaconf import DictConfig


@hydra.main(version_base="1.3", config_path="configs", config_name="audit")
def main(cfg: DictConfig) -> None:
    """Thin entry point: all logic lives in :func:`contamlab.jobs.audit.run`."""
    from contamlab.config import run_safely

    run_safely("contamlab.jobs.audit:run", cfg)  # imported once the config is valid: a bad value fails fast


if __name__ == "__main__":
    main()
