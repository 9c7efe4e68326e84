# prepare: stream one input, check it as rnapipe fold does (fold.on_invalid), and cut its valid records into
# shards of one length range each, sized by predicted work; a manifest keeps every record's place in the input
# and rejected.tsv the records left out. The directory is made afresh by each run of the job.


rule prepare:
    input:
        input_of,
    output:
        directory(f"{WORK}/{{sample}}/prepared"),
    log:
        f"{OUTDIR}/logs/prepare/{{sample}}.log",
    benchmark:
        f"{OUTDIR}/benchmarks/prepare/{{sample}}.tsv"
    params:
        rnapipe=RNAPIPE,
        options=f"--algorithm {ALGORITHM} --on-invalid {config['fold']['on_invalid']}"
        f" --shard-records {config['prepare']['shard_records']} --shard-cost {config['prepare']['shard_cost']}"
        + (" -C" if config["fold"]["constraint"] else "")
        + (" -p" if PARTITION else ""),
    threads: 1
    resources:
        mem_mb=config["prepare"]["mem_mb"],
    conda:
        "../envs/prepare.yaml"
    shell:
        "{params.rnapipe} prepare {input} -o {output} {params.options} 2> {log}"
