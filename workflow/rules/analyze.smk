rule analyze:
    """One arm's raw profile -> per-operator queue and CPU tables, the op-timeline step trace cross-checked against the host timers, a Chrome trace (trace.json, opens in Perfetto) and diagnosis.json (verdict, culprit operator, CPU state, recommendation)."""
    input:
        steps=f"{RESULTS}/runs/{{study}}/{{arm}}/steps.csv",
        summary=f"{RESULTS}/runs/{{study}}/{{arm}}/summary.json",
        profile=f"{RESULTS}/runs/{{study}}/{{arm}}/profile",
    output:
        diagnosis=f"{RESULTS}/runs/{{study}}/{{arm}}/diagnosis.json",
        ops=f"{RESULTS}/runs/{{study}}/{{arm}}/pipeline_ops.csv",
        queues=f"{RESULTS}/runs/{{study}}/{{arm}}/queues.csv",
        timeline=f"{RESULTS}/runs/{{study}}/{{arm}}/timeline_steps.csv",
        trace=f"{RESULTS}/runs/{{study}}/{{arm}}/trace.json",
    params:
        python=PYTHON,
        script=SCRIPTS / "analyze.py",
        run_dir=lambda w: f"{RESULTS}/runs/{w.study}/{w.arm}",
    log:
        f"{RESULTS}/logs/analyze/{{study}}/{{arm}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/analyze/{{study}}/{{arm}}.tsv"
    resources:
        mem_mb=1500,
    conda:
        "../envs/perfstudy.yaml"
    shell:
        "{params.python} {params.script} --run-dir {params.run_dir} 2> {log}"
