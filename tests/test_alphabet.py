"""rnapipe.alphabet's codes: encode and the table a GPU looks them up in (rnapipe.gpu.zuker._codes), against the
rule written out: A, C, G, U are 1 to 4 (ViennaRNA's order), every other byte 0."""

from __future__ import annotations

import numpy as np

from rnapipe.alphabet import ACCEPTED, code_table, encode

RULE = {"A": 1, "C": 2, "G": 3, "U": 4}


def test_code_table_is_the_rule_for_every_byte():
    table = code_table()
    assert table.dtype == np.int8 and table.shape == (256,)
    assert table.tolist() == [RULE.get(chr(b), 0) for b in range(256)]


def test_encode_and_the_table_agree_on_every_accepted_letter():
    text = "".join(sorted(ACCEPTED)) * 3 + "\0"
    assert encode(text).tolist() == [RULE.get(c, 0) for c in text]
    assert code_table()[np.frombuffer(text.encode("ascii"), dtype=np.uint8)].tolist() == encode(text).tolist()


def test_code_table_is_a_copy():
    code_table()[ord("A")] = 0
    assert code_table()[ord("A")] == 1
