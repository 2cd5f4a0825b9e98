rule compose_config:
    """One arm's resolved Hydra config (conf/ + the arm's and the global overrides)."""
    input:
        CONF_FILES,
    output:
        f"{RESULTS}/runs/{{study}}/{{arm}}/config.yaml",
    params:
        python=PYTHON,
        script=SCRIPTS / "compose_config.py",
        overrides=lambda w: arm_overrides(config, w.study, w.arm),
    log:
        f"{RESULTS}/logs/compose_config/{{study}}/{{arm}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/compose_config/{{study}}/{{arm}}.tsv"
    resources:
        mem_mb=500,
    conda:
        "../envs/perfstudy.yaml"
    shell:
        "{params.python} {params.script} --out {output} {params.overrides:q} 2> {log}"


rule make_dataset:
    """The deterministic JPEG ImageFolder + manifest.json (or a user's folder, validated)."""
    output:
        f"{RESULTS}/data/{{dataset}}/manifest.json",
    params:
        python=PYTHON,
        script=SCRIPTS / "make_dataset.py",
        data=dataset_params,
    log:
        f"{RESULTS}/logs/make_dataset/{{dataset}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/make_dataset/{{dataset}}.tsv"
    threads: workflow.cores
    resources:
        mem_mb=4000,
    conda:
        "../envs/perfstudy.yaml"
    shell:
        "{params.python} {params.script} --data {params.data:q} --out {output} "
        "--workers {threads} 2> {log}"
