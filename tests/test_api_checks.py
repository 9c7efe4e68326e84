"""rnapipe.fold checks what it is given as the command line does: a misspelt option, a thread count that is not
a whole number of at least 1, no sequences, or a temperature the model cannot use is one clear UsageError, never
a result folded with the defaults or a raw TypeError/OverflowError."""

from __future__ import annotations

import pytest

import rnapipe
from rnapipe.errors import UsageError


def test_a_misspelt_option_is_refused_with_the_right_name():
    with pytest.raises(UsageError, match=r"unknown option 'temprature' for zuker \(did you mean 'temperature'\?\)"):
        rnapipe.fold("GGGGAAAACCCC", temprature=25)


def test_the_right_option_still_folds_at_that_temperature():
    at_25 = rnapipe.fold("GGGGAAAACCCCAUAUAUGGGGAAAACCCC", temperature=25)[0].score_int
    at_37 = rnapipe.fold("GGGGAAAACCCCAUAUAUGGGGAAAACCCC")[0].score_int
    assert at_25 < at_37                 # colder: more stable, so the option reached the model


@pytest.mark.parametrize("threads", [0, -3, "2", 1.5, True])
def test_threads_must_be_a_whole_number_of_at_least_one(threads):
    with pytest.raises(UsageError, match="threads must be a whole number of at least 1"):
        rnapipe.fold("GGGGAAAACCCC", threads=threads)


@pytest.mark.parametrize("temperature", [1e9, -300, float("nan"), "hot"])
def test_a_temperature_the_model_cannot_use_is_refused(temperature):
    with pytest.raises(UsageError, match="temperature"):
        rnapipe.fold("GGGGAAAACCCC", temperature=temperature)


def test_no_sequences_is_refused_in_words():
    with pytest.raises(UsageError, match="no sequences"):
        rnapipe.fold(None)


def test_nussinov_options_are_its_engines_to_check():
    # GGGGAAAACCCC: 4 pairs around a 4-nt loop with any min_loop below 4, fewer where the loop must be longer
    assert rnapipe.fold("GGGGAAAACCCC", algorithm="nussinov", min_loop=3)[0].score_int == 4
    assert rnapipe.fold("GGGGAAAACCCC", algorithm="nussinov", min_loop=5)[0].score_int == 3
    with pytest.raises(UsageError):
        rnapipe.fold("GGGGAAAACCCC", algorithm="nussinov", temperature=25)
