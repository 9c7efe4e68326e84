# Fold one input file into one output format. rnapipe writes to a temporary name and renames it when
# complete, so an interrupted job leaves nothing that Snakemake could mistake for a finished output.


rule fold:
    input:
        input_of,
    output:
        f"{OUTDIR}/{{sample}}.{{algorithm}}.{{fmt}}",
    log:
        f"{OUTDIR}/logs/fold/{{sample}}.{{algorithm}}.{{fmt}}.log",
    benchmark:
        f"{OUTDIR}/benchmarks/fold/{{sample}}.{{algorithm}}.{{fmt}}.tsv"
    wildcard_constraints:
        algorithm="nussinov|zuker",
        fmt="db|tsv|ct|bpseq",
    params:
        options=fold_options(),
    threads: workflow.cores
    resources:
        mem_mb=config["fold"]["mem_mb"],
    shell:
        "rnapipe fold {input} -o {output} --algorithm {wildcards.algorithm} --format {wildcards.fmt}"
        " --threads {threads} {params.options} 2> {log}"
