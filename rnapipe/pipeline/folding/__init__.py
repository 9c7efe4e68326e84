"""Folding a stream: :mod:`.folder` (one engine as asked for: algorithm, variant, device, threads, GPUs),
:mod:`.pace` (how fast that engine folds: a record's predicted work and the rate, guessed then measured),
:mod:`.chunks` (the unit that is folded, written and journalled: a few seconds of the pace's work, cut where a
resumed run's journal says for the finished part) and :mod:`.stream` (chunks parsed on one thread, folded in
engine calls of a few seconds on the calling one, handed on in input order)."""
