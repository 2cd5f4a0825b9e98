rule compose_config:
    """One arm's resolved Hydra config (conf/ + the arm's and the global overrides)."""
    input:
        CONF_FILES,
    output:
        f"{RESULTS}/runs/{{study}}/{{arm}}/config.yaml",
    params:
        overrides=lambda w: arm_overrides(config, w.study, w.arm),
    log:
        f"{RESULTS}/logs/compose_config/{{study}}/{{arm}}.log",
    shell:
        "{PYTHON} {SCRIPTS}/compose_config.py --out {output} {params.overrides:q} 2> {log}"


rule make_dataset:
    """The deterministic JPEG ImageFolder + manifest.json (or a user's folder, validated)."""
    output:
        f"{RESULTS}/data/{{dataset}}/manifest.json",
    params:
        data=dataset_params,
    log:
        f"{RESULTS}/logs/make_dataset/{{dataset}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/make_dataset/{{dataset}}.tsv"
    threads: workflow.cores
    resources:
        mem_mb=4000,
    shell:
        "{PYTHON} {SCRIPTS}/make_dataset.py --data {params.data:q} --out {output} "
        "--workers {threads} 2> {log}"
