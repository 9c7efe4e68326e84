"""The workflow's stages, named as its commands: :mod:`.prepare` (an input cut into shards of like length),
:mod:`.partition` (shards assigned to CPU and GPU jobs) and :mod:`.merge` (the jobs' outputs back in input
order, every format)."""
