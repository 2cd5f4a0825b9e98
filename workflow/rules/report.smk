rule make_report:
    """All arms -> comparison.csv, figures, report.md and a self-contained report.html. Needs no tracking server: the report exists even when MLflow is down."""
    input:
        summaries=expand(f"{RESULTS}/runs/{{{{study}}}}/{{arm}}/summary.json", arm=ARMS),
        steps=expand(f"{RESULTS}/runs/{{{{study}}}}/{{arm}}/steps.csv", arm=ARMS),
        diagnoses=expand(f"{RESULTS}/runs/{{{{study}}}}/{{arm}}/diagnosis.json", arm=ARMS),
        queues=expand(f"{RESULTS}/runs/{{{{study}}}}/{{arm}}/queues.csv", arm=ARMS),
        claims=claims_input,
    output:
        html=report(f"{RESULTS}/report/{{study}}/report.html",
                    caption="../report/report.rst", category="Study report"),
        markdown=f"{RESULTS}/report/{{study}}/report.md",
        scorecard=f"{RESULTS}/report/{{study}}/scorecard.json",
        repeats=f"{RESULTS}/report/{{study}}/repeats.csv",
        comparison=report(f"{RESULTS}/report/{{study}}/comparison.csv",
                          caption="../report/comparison.rst", category="Study report"),
        breakdown=report(f"{RESULTS}/report/{{study}}/figures/step_breakdown.png",
                         caption="../report/step_breakdown.rst", category="Figures"),
        step_time=report(f"{RESULTS}/report/{{study}}/figures/step_time.png",
                         caption="../report/step_time.rst", category="Figures"),
        published=report(f"{RESULTS}/report/{{study}}/figures/published_vs_measured.png",
                         caption="../report/published_vs_measured.rst", category="Figures"),
        scaling=report(f"{RESULTS}/report/{{study}}/figures/scaling.png",
                       caption="../report/scaling.rst", category="Figures"),
        verified=report(f"{RESULTS}/report/{{study}}/figures/verified.png",
                        caption="../report/verified.rst", category="Figures"),
        step_distribution=report(f"{RESULTS}/report/{{study}}/figures/step_distribution.png",
                                 caption="../report/step_distribution.rst", category="Figures"),
        claim_history=report(f"{RESULTS}/report/{{study}}/figures/claim_history.png",
                             caption="../report/claim_history.rst", category="Figures"),
        **{f"verified_{arm}": report(f"{RESULTS}/report/{{study}}/figures/verified_{arm}.png",
                                     caption="../report/verified.rst", category="Figures",
                                     subcategory="Verified candidates", labels={"arm": arm})
           for arm in ARMS},
        **{f"steps_{arm}": report(f"{RESULTS}/report/{{study}}/figures/steps_{arm}.png",
                                  caption="../report/step_distribution.rst", category="Figures",
                                  subcategory="Step time distribution", labels={"arm": arm})
           for arm in ARMS},
        **{f"queues_{arm}": report(f"{RESULTS}/report/{{study}}/figures/queues_{arm}.png",
                                   caption="../report/queues.rst", category="Figures",
                                   subcategory="Data queues", labels={"arm": arm})
           for arm in ARMS},
    params:
        python=PYTHON,
        script=SCRIPTS / "make_report.py",
        arms=ARMS,
        report_dir=lambda w: f"{RESULTS}/report/{w.study}",
        runs_dir=lambda w: f"{RESULTS}/runs/{w.study}",
    log:
        f"{RESULTS}/logs/report/{{study}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/report/{{study}}.tsv"
    resources:
        mem_mb=1000,
    conda:
        "../envs/perfstudy.yaml"
    shell:
        "{params.python} {params.script} --study {wildcards.study} "
        "--runs-dir {params.runs_dir} --out {params.report_dir} "
        "--arms {params.arms:q} --claims '{input.claims}' 2> {log}"
