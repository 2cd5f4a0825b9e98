rule train:
    """Train one arm with the step trace. It takes every core, so no other job (and no other arm) runs beside it and its timings stay clean."""
    input:
        config=f"{RESULTS}/runs/{{study}}/{{arm}}/config.yaml",
        manifest=dataset_manifest,
        after=train_after,
        reused=reused_summaries,
        source=source_diagnosis,
    output:
        steps=f"{RESULTS}/runs/{{study}}/{{arm}}/steps.csv",
        summary=f"{RESULTS}/runs/{{study}}/{{arm}}/summary.json",
        profile=directory(f"{RESULTS}/runs/{{study}}/{{arm}}/profile"),
    params:
        python=train_python(),
        script=SCRIPTS / "train.py",
        run_dir=lambda w: Path(f"{RESULTS}/runs/{w.study}/{w.arm}").resolve(),
    log:
        f"{RESULTS}/logs/train/{{study}}/{{arm}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/train/{{study}}/{{arm}}.tsv"
    threads: workflow.cores
    resources:  # the device group's request (device=gpu: one GPU; on SLURM --gpus / --gres)
        mem_mb=3000,
        gpu=lambda w: ARM_CONFIGS[w.arm].device.slurm_gpus,
        gpu_model=lambda w: ARM_CONFIGS[w.arm].device.slurm_gpu_model,
        gres=lambda w: ARM_CONFIGS[w.arm].device.slurm_gres,
    conda:
        "../envs/perfstudy.yaml"
    shell:  # Hydra's app on the config compose_config resolved: its folder is the run folder
        "{params.python} {params.script} --config-path {params.run_dir} --config-name config "
        "++paths.manifest={input.manifest} hydra.run.dir={params.run_dir} hydra.output_subdir=null "
        "hydra/job_logging=none hydra/hydra_logging=none 2> {log}"
