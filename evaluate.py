"""Sample, mitigate, measure and detect. See configs/evaluate.yaml."""

import hydra
from omegaconf import DictConfig


@hydra.main(version_base="1.3", config_path="configs", config_name="evaluate")
def main(cfg: DictConfig) -> None:
    """Thin entry point: all logic lives in :func:`contamlab.evaluation.run`."""
    from contamlab.config import run_safely
    from contamlab.evaluation import run

    run_safely(run, cfg)


if __name__ == "__main__":
    main()
