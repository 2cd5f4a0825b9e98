rule track_init:
    """The study's MLflow experiment and parent run, made once before the trainings (each opens its arm's run under it while it trains: perfstudy.present.live) and before arms are logged (parallel jobs would race on creating them and on migrating the SQLite schema). Not an input of train: a tracker that is down never stops a training; a high priority runs it first."""
    input:
        configs=expand(f"{RESULTS}/runs/{{{{study}}}}/{{arm}}/config.yaml", arm=ARMS),
        claims=claims_input,
    output:
        f"{RESULTS}/runs/{{study}}/mlflow_study.json",
    params:
        python=PYTHON,
        script=SCRIPTS / "track_init.py",
    log:
        f"{RESULTS}/logs/track_init/{{study}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/track_init/{{study}}.tsv"
    priority: 50
    resources:
        mem_mb=1000,
    conda:
        "../envs/perfstudy.yaml"
    shell:
        "{params.python} {params.script} --run-configs {input.configs} --claims '{input.claims}' "
        "--out {output} 2> {log}"


rule track_arm:
    """One arm -> one MLflow child run (re-running updates the same run). It voids the study's receipt first, so a job killed half way is redone by the next run."""
    input:
        config=f"{RESULTS}/runs/{{study}}/{{arm}}/config.yaml",
        steps=f"{RESULTS}/runs/{{study}}/{{arm}}/steps.csv",
        summary=f"{RESULTS}/runs/{{study}}/{{arm}}/summary.json",
        diagnosis=f"{RESULTS}/runs/{{study}}/{{arm}}/diagnosis.json",
        trace=f"{RESULTS}/runs/{{study}}/{{arm}}/trace.json",
        study_ids=f"{RESULTS}/runs/{{study}}/mlflow_study.json",
        train_log=f"{RESULTS}/logs/train/{{study}}/{{arm}}.log",
        train_benchmark=f"{RESULTS}/benchmarks/train/{{study}}/{{arm}}.tsv",
        queues_figure=f"{RESULTS}/report/{{study}}/figures/queues_{{arm}}.png",
        verified_figure=f"{RESULTS}/report/{{study}}/figures/verified_{{arm}}.png",
        steps_figure=f"{RESULTS}/report/{{study}}/figures/steps_{{arm}}.png",
    output:
        f"{RESULTS}/runs/{{study}}/{{arm}}/mlflow_run.json",
    params:
        python=PYTHON,
        script=SCRIPTS / "track_arm.py",
        run_dir=lambda w: f"{RESULTS}/runs/{w.study}/{w.arm}",
        receipt=lambda w: f"{RESULTS}/report/{w.study}/mlflow_study.json",
    log:
        f"{RESULTS}/logs/track_arm/{{study}}/{{arm}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/track_arm/{{study}}/{{arm}}.tsv"
    resources:
        mem_mb=1000,
    conda:
        "../envs/perfstudy.yaml"
    shell:
        "{params.python} {params.script} --run-dir {params.run_dir} "
        "--study-ids {input.study_ids} --log {input.train_log} --study-receipt {params.receipt} "
        "--benchmark {input.train_benchmark} --figure queues.png={input.queues_figure} "
        "--figure verified.png={input.verified_figure} "
        "--figure step_distribution.png={input.steps_figure} 2> {log}"


rule track_study:
    """The report, comparison and aggregates onto the study's parent run."""
    input:
        report=f"{RESULTS}/report/{{study}}/report.html",
        markdown=f"{RESULTS}/report/{{study}}/report.md",
        comparison=f"{RESULTS}/report/{{study}}/comparison.csv",
        scorecard=f"{RESULTS}/report/{{study}}/scorecard.json",
        arm_runs=expand(f"{RESULTS}/runs/{{{{study}}}}/{{arm}}/mlflow_run.json", arm=ARMS),
        study_ids=f"{RESULTS}/runs/{{study}}/mlflow_study.json",
    output:
        f"{RESULTS}/report/{{study}}/mlflow_study.json",
    params:
        python=PYTHON,
        script=SCRIPTS / "track_study.py",
        report_dir=lambda w: f"{RESULTS}/report/{w.study}",
        runs_dir=lambda w: f"{RESULTS}/runs/{w.study}",
    log:
        f"{RESULTS}/logs/track_study/{{study}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/track_study/{{study}}.tsv"
    resources:
        mem_mb=1000,
    conda:
        "../envs/perfstudy.yaml"
    shell:
        "{params.python} {params.script} --report-dir {params.report_dir} "
        "--study-ids {input.study_ids} --out {output} --runs-dir {params.runs_dir} "
        "--run-files {input.arm_runs} 2> {log}"
