#!/usr/bin/env python
"""Train one arm and write its steps.csv and summary.json: a Hydra app on conf/.

By hand (Hydra's own command line; the run folder is paths.run_dir):
    python scripts/train.py experiment=tuned trainer.steps=30
    python scripts/train.py size=smoke experiment=baseline --cfg job     # the config, nothing run
    python scripts/train.py --help                                       # groups and options
    python scripts/train.py -m size=smoke pipeline.num_parallel_workers=1,2   # two trainings,
        # each in its own folder: <paths.results>/multirun/<time>/<job number>
From the DAG, on the config the compose_config rule resolved (its folder is the run folder):
    python scripts/train.py --config-path $PWD/results/runs/seed_case/tuned --config-name config \
        ++paths.manifest=results/data/photos16mp/manifest.json \
        hydra.run.dir=results/runs/seed_case/tuned hydra.output_subdir=null hydra/job_logging=none
"""

import sys

import hydra
from omegaconf import DictConfig

from perfstudy.common.config import open_overrides, register_schema
from perfstudy.orchestrate.train_app import precheck, train_job

register_schema()  # conf/config.yaml's defaults start with the typed schema (run_schema)


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
def main(cfg: DictConfig) -> None:
    train_job(cfg)


if __name__ == "__main__":
    # operators' addresses (pipeline.workers.<address>=2) as written, no `+`: the free-form
    # dicts' keys are added or set (++), as the DAG's compose does
    sys.argv[1:] = open_overrides(sys.argv[1:])
    precheck(sys.argv[1:])  # a bad override: one sentence, before Hydra's own report
    main()
