# fold_cpu, fold_gpu: one job a (input, job number), each one `rnapipe fold` of the shards its list names, in db
# format (what the merge reads). rnapipe writes the output as OUTPUT.part and renames it when complete, and keeps
# OUTPUT.journal meanwhile, so a job cut off goes on from its finished chunks when it runs again; a journal older
# than the job's list belongs to another plan and is discarded (--restart). A job with no shards writes an empty
# file. On one node both kinds run at once (--cores all --resources gpu=N); GPU jobs ask for gpu=1.


rule fold_cpu:
    input:
        shards=f"{WORK}/{{sample}}/plan/cpu{{j}}.list",
        prepared=f"{WORK}/{{sample}}/prepared",
    output:
        f"{WORK}/{{sample}}/fold/cpu{{j}}.db",
    log:
        f"{OUTDIR}/logs/fold/{{sample}}.cpu{{j}}.log",
    benchmark:
        f"{OUTDIR}/benchmarks/fold/{{sample}}.cpu{{j}}.tsv"
    wildcard_constraints:
        j=r"\d+",
    params:
        rnapipe=RNAPIPE,
        options=fold_options(),
    threads: CPU_THREADS
    resources:
        mem_mb=config["fold"]["mem_mb"],
    conda:
        "../envs/fold_cpu.yaml"
    shell:
        "if [ -s {input.shards} ]; then"
        " restart=; if [ -e {output}.journal ] && [ {input.shards} -nt {output}.journal ]; then restart=--restart; fi;"
        " {params.rnapipe} fold $(cat {input.shards}) -o {output} --format db --device cpu --threads {threads}"
        " {params.options} $restart 2> {log};"
        " else : > {output}; echo 'rnapipe: no shards for this job' > {log}; fi"


rule fold_gpu:
    input:
        shards=f"{WORK}/{{sample}}/plan/gpu{{j}}.list",
        prepared=f"{WORK}/{{sample}}/prepared",
    output:
        f"{WORK}/{{sample}}/fold/gpu{{j}}.db",
    log:
        f"{OUTDIR}/logs/fold/{{sample}}.gpu{{j}}.log",
    benchmark:
        f"{OUTDIR}/benchmarks/fold/{{sample}}.gpu{{j}}.tsv"
    wildcard_constraints:
        j=r"\d+",
    params:
        rnapipe=RNAPIPE,
        options=fold_options(),
        gpu=gpu_of,
    threads: 1
    resources:
        mem_mb=config["fold"]["mem_mb"],
        gpu=1,
    conda:
        "../envs/fold_gpu.yaml"
    shell:
        "if [ -s {input.shards} ]; then"
        " restart=; if [ -e {output}.journal ] && [ {input.shards} -nt {output}.journal ]; then restart=--restart; fi;"
        " {params.rnapipe} fold $(cat {input.shards}) -o {output} --format db --device gpu --gpus {params.gpu}"
        " --threads {threads} {params.options} $restart 2> {log};"
        " else : > {output}; echo 'rnapipe: no shards for this job' > {log}; fi"
