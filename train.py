"""Simulate contamination: base -> clean -> contaminated models. See configs/train.yaml."""

import hydra
from omegaconf import DictConfig


@hydra.main(version_base="1.3", config_path="configs", config_name="train")
def main(cfg: DictConfig) -> None:
    """Thin entry point: all logic lives in :func:`contamlab.jobs.train.run`."""
    from contamlab.config import run_safely

    run_safely("contamlab.jobs.train:run", cfg)  # imported once the config is valid: a bad value fails fast


if __name__ == "__main__":
    main()
