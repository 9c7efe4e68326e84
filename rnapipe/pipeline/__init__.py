"""The layer between the front doors (:mod:`rnapipe.api`, :mod:`rnapipe.cli`, the workflow) and the engines
(:mod:`rnapipe.cpu`, :mod:`rnapipe.gpu`). Imports run one way: front doors → pipeline → engines →
model/params/io → config/errors; nothing here prints or names a command-line flag.

- ``input/``    FASTA bytes to packed records: the compiled scan, duplicate ids, the block reader.
- ``folding/``  one engine as asked for (:class:`~.folding.folder.Folder`), chunks, and the stream that folds
  them in input order with reading and writing overlapped.
- ``output/``   each output's part file, a chunk's text (made by :mod:`rnapipe.io.render`) appended at a time.
- ``resume/``   ``rnapipe fold``'s run: the journal of finished chunks, the run itself, progress.
- ``hybrid/``   CPU ∥ GPU: cost model and profile, the static and dynamic splits, the hybrid folder,
  ``--device auto``.
- ``ensemble/`` folding with the partition function (RNAfold -p): its settings and refusals, and the folder of
  the CPU partition engine that the stream, journal and outputs take as they take the MFE folders.
- ``workflow/`` the workflow's stages: prepare (shards), partition (jobs), fold jobs, merge; the jobs' resources.
- ``records.py`` packed records; ``balance.py`` work shared out by predicted time; ``choose.py`` the folder a
  request asks for; ``timeline.py`` where a run's time goes; ``warm.py`` compiled passes loaded ahead of need;
  ``pause.py`` the points where kill-and-resume tests stop a run.
"""
