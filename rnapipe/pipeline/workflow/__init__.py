"""The workflow's stages, named as its commands: :mod:`.prepare` (an input cut into shards of like length),
:mod:`.partition` (shards assigned to CPU and GPU jobs), :mod:`.fold_job` (one job's shards folded, resumable,
and linked to its output), :mod:`.merge` (the jobs' outputs back in input order, every format), and
:mod:`.resources` (the GPU jobs and CPU threads the fold jobs take on this host)."""
