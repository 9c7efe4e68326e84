"""Folding a stream: :mod:`.folder` (one engine as asked for: algorithm, variant, device, threads, GPUs),
:mod:`.chunks` (the unit that is folded, written and journalled; its bounds depend on the records alone) and
:mod:`.stream` (chunks parsed on one thread, folded in batches on the calling one, handed on in input order)."""
