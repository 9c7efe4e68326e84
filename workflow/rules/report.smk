# report: pictures of the run for `snakemake --report report.html` (captions in workflow/report/): throughput per
# device, the partition (each device's predicted against measured time), time against length (the profile), and
# the distribution of the scores. Measured times are the fold jobs' benchmark files.


rule report:
    input:
        outputs=[score_output(sample) for sample in SAMPLES],
        jobs=expand(f"{WORK}/{{sample}}/plan/jobs.tsv", sample=SAMPLES),
        profile=profile_input(),
    output:
        throughput=report(
            f"{OUTDIR}/report/throughput.svg", caption="../report/throughput.rst", category="Devices"
        ),
        partition=report(
            f"{OUTDIR}/report/partition.svg", caption="../report/partition.rst", category="Devices"
        ),
        time_vs_length=report(
            f"{OUTDIR}/report/time_vs_length.svg", caption="../report/time_vs_length.rst", category="Devices"
        ),
        energy=report(f"{OUTDIR}/report/energy.svg", caption="../report/energy.rst", category="Results"),
    log:
        f"{OUTDIR}/logs/report/report.log",
    benchmark:
        f"{OUTDIR}/benchmarks/report/report.tsv"
    params:
        samples=list(SAMPLES),
        algorithm=ALGORITHM,
        fmt=SCORE_FORMAT,
        db_lines=(7 if config["fold"]["mea"] else 6) if PARTITION else 3,
        benchmarks=f"{OUTDIR}/benchmarks/fold",
    threads: 1
    resources:
        mem_mb=2000,
    conda:
        "../envs/report.yaml"
    script:
        "../scripts/report.py"
