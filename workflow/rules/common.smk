# Helpers shared by the rules.

OUTDIR = config["outdir"]
SUFFIX = {"db": "db", "tsv": "tsv", "ct": "ct", "bpseq": "bpseq"}


def all_outputs():
    return [
        f"{OUTDIR}/{sample}.{config['fold']['algorithm']}.{SUFFIX[fmt]}"
        for sample in config["inputs"]
        for fmt in config["formats"]
    ]


def input_of(wildcards):
    return config["inputs"][wildcards.sample]


def fold_options():
    fold = config["fold"]
    opts = [f"--device {fold['device']}", f"--on-invalid {fold['on_invalid']}", "--quiet"]
    if fold.get("variant"):
        opts.append(f"--variant {fold['variant']}")
    return " ".join(opts)
