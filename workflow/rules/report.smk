rule make_report:
    """All arms -> comparison.csv, figures, report.md and a self-contained report.html. Needs no tracking server: the report exists even when MLflow is down."""
    input:
        summaries=expand(f"{RESULTS}/runs/{{{{study}}}}/{{arm}}/summary.json", arm=ARMS),
        steps=expand(f"{RESULTS}/runs/{{{{study}}}}/{{arm}}/steps.csv", arm=ARMS),
    output:
        html=report(f"{RESULTS}/report/{{study}}/report.html",
                    caption="../report/report.rst", category="Study report"),
        markdown=f"{RESULTS}/report/{{study}}/report.md",
        comparison=report(f"{RESULTS}/report/{{study}}/comparison.csv",
                          caption="../report/comparison.rst", category="Study report"),
        breakdown=report(f"{RESULTS}/report/{{study}}/figures/step_breakdown.png",
                         caption="../report/step_breakdown.rst", category="Figures"),
        step_time=report(f"{RESULTS}/report/{{study}}/figures/step_time.png",
                         caption="../report/step_time.rst", category="Figures"),
        published=report(f"{RESULTS}/report/{{study}}/figures/published_vs_measured.png",
                         caption="../report/published_vs_measured.rst", category="Figures"),
    params:
        arms=ARMS,
    log:
        f"{RESULTS}/logs/report/{{study}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/report/{{study}}.tsv"
    shell:
        "{PYTHON} {SCRIPTS}/make_report.py --study {wildcards.study} "
        "--runs-dir {RESULTS}/runs/{wildcards.study} --out {RESULTS}/report/{wildcards.study} "
        "--arms {params.arms:q} 2> {log}"
