# merge: one input's fold job outputs back in input order, every configured format written from them (byte for
# byte what one `rnapipe fold` of the input writes), and the rejected records' list beside the first output
# (a header only when nothing was skipped).


rule merge:
    input:
        prepared=f"{WORK}/{{sample}}/prepared",
        plan=f"{WORK}/{{sample}}/plan/plan.tsv",
        folds=expand(f"{WORK}/{{{{sample}}}}/fold/{{job}}.db", job=job_names()),
    output:
        outputs=final_outputs("{sample}"),
        rejected=rejected_output("{sample}"),
    log:
        f"{OUTDIR}/logs/merge/{{sample}}.log",
    benchmark:
        f"{OUTDIR}/benchmarks/merge/{{sample}}.tsv"
    params:
        rnapipe=RNAPIPE,
        algorithm=ALGORITHM,
        plan=lambda wildcards, input: os.path.dirname(input.plan),
        folds=lambda wildcards, input: os.path.dirname(input.folds[0]),
        outputs=lambda wildcards, output: " ".join(
            f"-o {path} --format {fmt}" for path, fmt in zip(output.outputs, FORMATS)
        ),
        partition=(" -p" if PARTITION else "") + (" --MEA" if PARTITION and config["fold"]["mea"] else ""),
    threads: 1
    resources:
        mem_mb=2000,
    conda:
        "../envs/merge.yaml"
    shell:
        "{params.rnapipe} merge {input.prepared} --plan {params.plan} --folds {params.folds} {params.outputs}"
        " --algorithm {params.algorithm} --rejected {output.rejected}{params.partition} 2> {log}"
