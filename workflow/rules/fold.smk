# Fold one input file once into every configured format (rnapipe fold -o per format). rnapipe writes each
# output as OUTPUT.part and renames it when complete, so an interrupted job leaves nothing that Snakemake
# could mistake for a finished output; its journal (OUTPUT.journal) lets the rerun of the job go on from the
# chunks already folded. Progress lines go to the job's log.


rule fold:
    input:
        input_of,
    output:
        fold_outputs("{sample}"),
    log:
        f"{OUTDIR}/logs/fold/{{sample}}.{ALGORITHM}.log",
    benchmark:
        f"{OUTDIR}/benchmarks/fold/{{sample}}.{ALGORITHM}.tsv"
    params:
        algorithm=ALGORITHM,
        options=fold_options(),
        outputs=lambda wildcards, output: " ".join(f"-o {path}" for path in output),
    threads: workflow.cores
    resources:
        mem_mb=config["fold"]["mem_mb"],
    shell:
        "rnapipe fold {input} {params.outputs} --algorithm {params.algorithm} --threads {threads}"
        " {params.options} 2> {log}"
