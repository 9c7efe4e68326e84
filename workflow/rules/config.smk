# The configuration as the rules read it: numbers and booleans given as text on the command line made numbers
# and booleans, then checked against the schema (defaults filled in, unknown keys refused).
#
# `--config 'jobs={gpu: 2}'` hands nested values over as strings ('2'); where the schema wants an integer, a
# number or a boolean there, a string that reads as one is taken as one ('true', 'false'), so that the README's
# own commands validate.

import yaml
from snakemake.utils import validate

SCHEMA = f"{workflow.basedir}/workflow/schemas/config.schema.yaml"


def _types(schema):
    kinds = schema.get("type", [])
    kinds = [kinds] if isinstance(kinds, str) else list(kinds)
    for alternative in schema.get("oneOf", []) + schema.get("anyOf", []):
        kinds += _types(alternative)
    return kinds


def as_numbers(value, schema):
    """``value`` with every string that the schema wants as an integer, a number, a boolean or null made one."""
    if isinstance(value, dict):
        props = schema.get("properties", {})
        return {key: as_numbers(item, props.get(key, {})) for key, item in value.items()}
    if isinstance(value, list):
        return [as_numbers(item, schema.get("items", {})) for item in value]
    if isinstance(value, str):
        kinds = _types(schema)
        if "null" in kinds and value.strip() in ("null", "None", "~"):
            return None
        if "boolean" in kinds and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        for kind, make in (("integer", int), ("number", float)):
            if kind in kinds:
                try:
                    return make(value.strip())
                except ValueError:
                    pass
    return value


with open(SCHEMA) as _handle:
    config.update(as_numbers(dict(config), yaml.safe_load(_handle)))
validate(config, SCHEMA)
