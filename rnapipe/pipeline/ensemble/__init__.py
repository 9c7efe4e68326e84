"""Folding with the partition function (RNAfold ``-p``): what a request for it may ask (:mod:`.request`) and the
folder that runs the CPU partition engine (:mod:`.folder`) in the stream the MFE folds run in; its outputs'
text is :mod:`rnapipe.io.ensemble`'s."""
