# rnapipe workflow: thin entry point. Stages live in workflow/rules/*.smk.
# Run the bundled example:  snakemake --cores all
# Another input:            snakemake --cores all --config inputs='{"mine": "path/to/mine.fa.gz"}'
from snakemake.utils import min_version, validate

min_version("9.0")


configfile: "config/config.yaml"


validate(config, "workflow/schemas/config.schema.yaml")


include: "workflow/rules/common.smk"
include: "workflow/rules/fold.smk"


rule all:
    input:
        all_outputs(),
    default_target: True
