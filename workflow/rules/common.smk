# Helpers shared by the rules.

import re
from pathlib import Path

OUTDIR = config["outdir"]
ALGORITHM = config["fold"]["algorithm"]
SUFFIX = {"db": "db", "tsv": "tsv", "ct": "ct", "bpseq": "bpseq"}


def sample_name(path):
    """example.fa.gz -> example: the output prefix of one input file."""
    return re.sub(r"(\.(fa|fasta|fna|fas))?(\.gz)?$", "", Path(path).name, flags=re.IGNORECASE)


SAMPLES = {}
for _path in config["inputs"]:
    _name = sample_name(_path)
    if _name in SAMPLES:
        raise ValueError(f"inputs {SAMPLES[_name]} and {_path} would both write {OUTDIR}/{_name}.*; rename one")
    SAMPLES[_name] = _path


def fold_outputs(sample):
    """The outputs of one input: one file per configured format, all from one fold."""
    return [f"{OUTDIR}/{sample}.{ALGORITHM}.{SUFFIX[fmt]}" for fmt in dict.fromkeys(config["formats"])]


def all_outputs():
    return [path for sample in SAMPLES for path in fold_outputs(sample)]


def input_of(wildcards):
    return SAMPLES[wildcards.sample]


def fold_options():
    fold = config["fold"]
    opts = [f"--device {fold['device']}", f"--on-invalid {fold['on_invalid']}"]
    if fold.get("variant"):
        opts.append(f"--variant {fold['variant']}")
    if fold.get("gpus"):
        opts.append("--gpus " + ",".join(str(g) for g in fold["gpus"]))
    return " ".join(opts)
