rule compose_config:
    """One arm's resolved Hydra config (conf/ + the arm's and the global overrides)."""
    input:
        CONF_FILES,
    output:
        f"{RESULTS}/runs/{{study}}/{{arm}}/config.yaml",
    params:
        python=PYTHON,
        script=SCRIPTS / "compose_config.py",
        # with what the claims tell the arm's rounds (a remedy's "5x": decide.claims.rounds_overrides);
        # the claims file is no input: only an arm whose overrides change is composed again
        # and the earlier runs whose rounds it may reuse (verify.reuse_from: paths.reused)
        # and the source run whose prediction its rounds decide (paths.source_run)
        overrides=lambda w: [*arm_overrides(FLOW, w.study, w.arm, study_claims(w.study)),
                             *reused_overrides(FLOW, w.study, w.arm, ARM_CONFIGS[w.arm]),
                             *source_run_override(ARM_CONFIGS[w.arm])],
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
    wildcard_constraints:
        dataset=r"(?!prepared-)[^/]+",
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


rule prepare_dataset:
    """A derived dataset that decodes less: the source's images re-encoded as JPEG at a bounded resolution in one MindRecord file + manifest.json (source manifest sha256, settings, bytes and megapixels before/after, PSNR, preparation time)."""
    input:
        prepared_source,
    output:
        f"{RESULTS}/data/{{prepared}}/manifest.json",
    wildcard_constraints:
        prepared=r"prepared-[^/]+",
    params:
        python=PYTHON,
        script=SCRIPTS / "prepare_dataset.py",
        spec=prepared_params,
    log:
        f"{RESULTS}/logs/prepare_dataset/{{prepared}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/prepare_dataset/{{prepared}}.tsv"
    threads: workflow.cores
    resources:
        mem_mb=4000,
    conda:
        "../envs/perfstudy.yaml"
    shell:
        "{params.python} {params.script} --source {input} --spec {params.spec:q} --out {output} "
        "--workers {threads} 2> {log}"
