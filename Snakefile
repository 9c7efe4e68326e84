# rnapipe workflow: prepare -> profile -> partition -> fold (CPU jobs || GPU jobs) -> merge -> report.
# Stages live in workflow/rules/*.smk, one file each; config keys in config/README.md.
# Run the bundled example:  snakemake --cores all
# Your own inputs:          snakemake --cores all --config 'inputs=[path/to/mine.fa.gz]'
from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


include: "workflow/rules/config.smk"
include: "workflow/rules/common.smk"
include: "workflow/rules/lock.smk"
include: "workflow/rules/prepare.smk"
include: "workflow/rules/profile.smk"
include: "workflow/rules/partition.smk"
include: "workflow/rules/fold.smk"
include: "workflow/rules/merge.smk"
include: "workflow/rules/report.smk"


onstart:
    record_lock_holder()
    print_devices()


onerror:
    print_failures()


rule all:
    input:
        all_outputs(),
        report_outputs(),
    default_target: True
