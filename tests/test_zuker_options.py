"""RNAfold's pairing rules on the Zuker CPU engine: ``no_lp`` (--noLP), ``no_gu`` (--noGU), ``no_closing_gu``
(--noClosingGU) and ``max_bp_span`` (--maxBPspan), alone and together, with dangles 2 and 0.

The reference is ViennaRNA's ``RNA.fold_compound(seq, md).mfe()`` with ``md.noLP``, ``md.noGU``,
``md.noGUclosure`` and ``md.max_bp_span`` set: the MFE to the integer dcal/mol and the very structure RNAfold
prints. Every structure is also checked against the rule itself, without ViennaRNA: no lonely pair, no GU pair,
no GU pair closing a loop or enclosed by a bulge or interior loop, no pair spanning more than the limit. Then
the layers that carry the rules: the model's checks, the API, ``device='auto'``, and the GPU and hybrid devices,
which take them (their results on a GPU: tests/test_zuker_gpu_options.py) while still refusing constraints and
SHAPE data with one line before any work.
"""

from __future__ import annotations

import random

import pytest

from shared_data import shared_sequences

import rnapipe
from rnapipe.cpu import zuker
from rnapipe.errors import UsageError
from rnapipe.model import Model

RNA = pytest.importorskip("RNA")

THREADS = 2
# our option name -> ViennaRNA's model detail
MD = {"no_lp": "noLP", "no_gu": "noGU", "no_closing_gu": "noGUclosure", "max_bp_span": "max_bp_span"}


def vienna(seq: str, dangles: int = 2, **rules) -> tuple[int, str]:
    md = RNA.md()
    md.dangles = dangles
    for name, value in rules.items():
        setattr(md, MD[name], int(value))
    structure, mfe = RNA.fold_compound(seq, md).mfe()
    return round(mfe * 100), structure


def random_seqs(count: int, lo: int, hi: int, seed: int) -> list[str]:
    """Half uniform ACGU, half rich in G and U (GU pairs everywhere), a few with N."""
    rng = random.Random(seed)
    out = []
    for k in range(count):
        letters = "ACGU" if k % 2 else "GGUUUACG"
        seq = "".join(rng.choice(letters) for _ in range(rng.randint(lo, hi)))
        if k % 10 == 3 and seq:
            p = rng.randrange(len(seq))
            seq = seq[:p] + "N" + seq[p + 1:]
        out.append(seq)
    return out


def pairs_of(structure: str) -> dict[int, int]:
    """i -> j for every pair i < j (1-based)."""
    stack, pairs = [], {}
    for k, c in enumerate(structure, start=1):
        if c == "(":
            stack.append(k)
        elif c == ")":
            pairs[stack.pop()] = k
    assert not stack
    return pairs


def broken_rules(seq: str, structure: str, rules: dict) -> list[str]:
    """What in ``structure`` breaks one of ``rules``, found from the structure alone."""
    pairs = pairs_of(structure)
    partner = {**pairs, **{j: i for i, j in pairs.items()}}
    found = []

    def gu(i, j):
        return {seq[i - 1], seq[j - 1]} == {"G", "U"}

    def inner(i, j):
        """The pairs directly inside i·j."""
        out, k = [], i + 1
        while k < j:
            if k in pairs:
                out.append((k, pairs[k]))
                k = pairs[k] + 1
            else:
                k += 1
        return out

    for i, j in pairs.items():
        if rules.get("no_lp") and partner.get(i - 1) != j + 1 and partner.get(i + 1) != j - 1:
            found.append(f"lonely pair {i}-{j}")
        if rules.get("no_gu") and gu(i, j):
            found.append(f"GU pair {i}-{j}")
        span = rules.get("max_bp_span")
        if span and j - i + 1 > span:
            found.append(f"pair {i}-{j} spans more than {span}")
        if rules.get("no_closing_gu"):
            branches = inner(i, j)
            stacked = branches == [(i + 1, j - 1)]
            if gu(i, j) and not stacked:
                found.append(f"GU pair {i}-{j} closes a loop")
            if len(branches) == 1 and not stacked and gu(*branches[0]):
                found.append(f"GU pair {branches[0]} inside a bulge or interior loop")
    return found


def test_the_rule_checker_finds_what_it_looks_for():
    seq = "GGGAAAUCCCAGAAAUUGCGUAAAAACGG"
    assert broken_rules(seq, "(((...)))....................", {"no_lp": True}) == []
    assert broken_rules(seq, "((.(...).)).................", {"no_lp": True}) == ["lonely pair 4-8"]
    assert broken_rules("GAAAU", "(...)", {"no_gu": True}) == ["GU pair 1-5"]
    assert broken_rules("GGAAAUCC", "((....))", {"max_bp_span": 7}) == ["pair 1-8 spans more than 7"]
    assert broken_rules("GGAAAUCC", "((....))", {"max_bp_span": 8}) == []
    assert broken_rules("GGAAAUC", "((...))", {"no_closing_gu": True}) == ["GU pair 2-6 closes a loop"]
    assert broken_rules("GAGAAAUU", "(.(...))", {"no_closing_gu": True}) == [
        "GU pair 3-7 closes a loop", "GU pair 1-8 closes a loop", "GU pair (3, 7) inside a bulge or interior loop"]
    assert broken_rules("GCGAAAGCU", "((.....))", {"no_closing_gu": True}) == []       # GU stacked on CG


def assert_as_rnafold(seqs: list[str], dangles: int = 2, **rules) -> None:
    """The engine's MFE and structure are ViennaRNA's with the same rules, and the structure keeps them."""
    ours = zuker.fold_batch(seqs, "default", THREADS, {"dangles": dangles, **rules})
    wrong = []
    for seq, (energy, structure) in zip(seqs, ours):
        ref = vienna(seq, dangles, **rules)
        if (energy, structure) != ref or broken_rules(seq, structure, rules):
            wrong.append((seq, (energy, structure), ref, broken_rules(seq, structure, rules)))
    assert not wrong, f"{len(wrong)} of {len(seqs)} differ; first (seq, ours, ViennaRNA's, broken): {wrong[0]}"


RULES = {
    "noLP": {"no_lp": True},
    "noGU": {"no_gu": True},
    "noClosingGU": {"no_closing_gu": True},
    "noLP+noClosingGU": {"no_lp": True, "no_closing_gu": True},
    "noLP+noGU+span40": {"no_lp": True, "no_gu": True, "max_bp_span": 40},
    "all": {"no_lp": True, "no_gu": True, "no_closing_gu": True, "max_bp_span": 60},
    "noLP+noClosingGU+span25": {"no_lp": True, "no_closing_gu": True, "max_bp_span": 25},
}


@pytest.mark.parametrize("dangles", [2, 0])
@pytest.mark.parametrize("name", sorted(RULES))
def test_random_sequences_as_rnafold(name, dangles):
    """300 random sequences of 1-150 nt for each rule and combination, dangles 2 and 0."""
    assert_as_rnafold(random_seqs(300, 1, 150, seed=len(name) * 10 + dangles), dangles, **RULES[name])


@pytest.mark.parametrize("dangles", [2, 0])
def test_max_bp_span_as_rnafold(dangles):
    """300 random sequences of 1-150 nt in groups, each folded with its own span: 1 (no pair fits), 4 and 5
    (the shortest hairpin is 5 nt), then up to more than the sequences' lengths."""
    seqs = random_seqs(300, 1, 150, seed=77 + dangles)
    spans = [1, 4, 5, 6, 9, 13, 21, 34, 55, 89, 144, 200]
    for k, span in enumerate(spans):
        assert_as_rnafold(seqs[k::len(spans)], dangles, max_bp_span=span)


def test_co_optimal_structures_under_no_lp():
    """Short sequences of few letters have many structures of the MFE: the one printed is RNAfold's."""
    rng = random.Random(5)
    seqs = ["".join(rng.choice("GC" if k % 3 else "GCAU") for _ in range(rng.randint(8, 40))) for k in range(400)]
    assert_as_rnafold(seqs, 2, no_lp=True)
    assert_as_rnafold(seqs[:200], 0, no_lp=True, no_closing_gu=True)


@pytest.mark.parametrize("rules", [{"no_lp": True}, {"max_bp_span": 150}, {"no_closing_gu": True, "no_gu": True}],
                         ids=["noLP", "span150", "noGU+noClosingGU"])
def test_shared_data(rules):
    """Real RNAs of ../shared/data (miRBase hairpins, tRNAs, RNAStralign) up to 600 nt, about 250 of them."""
    seqs = shared_sequences(600)
    if not seqs:
        pytest.skip("../shared/data is not here")
    assert_as_rnafold(seqs[len(rules)::max(1, len(seqs) // 250)], 2, **rules)


def test_long_sequences_with_a_span():
    """Sequences of 600-1,200 nt with spans of 50 and 150: only cells of span <= N are filled, W spans it all."""
    seqs = random_seqs(6, 600, 1200, seed=3)
    assert_as_rnafold(seqs[:3], 2, max_bp_span=50)
    assert_as_rnafold(seqs[3:], 0, max_bp_span=150, no_lp=True)


def test_defaults_spelled_out_change_nothing():
    seqs = random_seqs(40, 1, 120, seed=8)
    spelled = {"no_lp": False, "no_gu": False, "no_closing_gu": False, "max_bp_span": None}
    assert zuker.fold_batch(seqs, "default", 1, spelled) == zuker.fold_batch(seqs, "default", 1, {})
    assert Model(**spelled).pairing() == {} and Model(**spelled) == Model()
    # a span as long as the sequence or longer is no limit
    assert zuker.fold_batch(seqs, "default", 1, {"max_bp_span": 120}) == zuker.fold_batch(seqs, "default", 1, {})


@pytest.mark.parametrize("options, words", [
    ({"max_bp_span": 0}, "max_bp_span must be a whole number of at least 1"),
    ({"max_bp_span": -1}, "max_bp_span must be"),
    ({"max_bp_span": 1.5}, "max_bp_span must be"),
    ({"max_bp_span": "10"}, "max_bp_span must be"),
    ({"max_bp_span": True}, "max_bp_span must be"),
    ({"no_lp": "yes"}, "no_lp must be True or False"),
    ({"no_gu": 1}, "no_gu must be True or False"),
    ({"no_closing_gu": None, "no_lp": 0}, "no_lp must be True or False"),
])
def test_bad_values_are_one_line_usage_errors(options, words):
    """The model refuses them, and rnapipe.fold before any folding (its message speaks no command line)."""
    with pytest.raises(UsageError, match=words):
        Model.from_options(options)

    def never():
        raise AssertionError("a sequence was read")
        yield "GGGGAAAACCCC"

    with pytest.raises(UsageError, match=words) as err:
        rnapipe.fold(never(), **options)
    assert "\n" not in str(err.value) and "--" not in str(err.value)


def test_api_takes_the_rules_by_name():
    seqs = random_seqs(30, 20, 120, seed=12)
    results = rnapipe.fold(seqs, threads=1, no_lp=True, max_bp_span=50, dangles=0)
    assert [(r.score_int, r.structure) for r in results] == [vienna(s, 0, no_lp=True, max_bp_span=50) for s in seqs]
    with pytest.raises(UsageError, match="did you mean 'no_lp'"):
        rnapipe.fold(seqs, noLP=True)


@pytest.mark.parametrize("device", ["gpu", "hybrid"])
@pytest.mark.parametrize("option", [{"no_lp": True}, {"no_gu": True}, {"no_closing_gu": True},
                                    {"max_bp_span": 100}], ids=lambda o: next(iter(o)))
def test_gpu_and_hybrid_take_the_rules_shape_and_constraints(device, option):
    """A rule, SHAPE data or constraint lines are no reason to refuse the GPU or the hybrid: with a GPU here they
    fold (the CPU engine's results), without one the only refusal is the missing GPU's, which names no rule."""
    from rnapipe.errors import UnavailableError
    from rnapipe.gpu.devices import gpu_available

    seqs = random_seqs(6, 20, 120, seed=14)
    name = next(iter(option))
    if gpu_available():
        results = rnapipe.fold(seqs, device=device, threads=2, **option)
        assert [(r.score_int, r.structure) for r in results] == zuker.fold_batch(seqs, "default", 1, option)
    else:
        with pytest.raises(UnavailableError, match="needs an NVIDIA GPU") as err:
            rnapipe.fold(seqs, device=device, **option)
        assert name not in str(err.value)
    data = ({"shape": [0.1] * 12}, {"constraints": "((((....))))"},
            {"constraints": "x..|........", "enforce_constraint": True})
    for more in data:                             # per-record data fold on every device, with the rules too
        if gpu_available():
            [r] = rnapipe.fold("GGGGAAAACCCC", device=device, **more, **option)
            [want] = rnapipe.fold("GGGGAAAACCCC", device="cpu", **more, **option)
            assert (r.score_int, r.structure) == (want.score_int, want.structure)
        else:
            with pytest.raises(UnavailableError, match="needs an NVIDIA GPU") as err:
                rnapipe.fold("GGGGAAAACCCC", device=device, **more, **option)
            assert "constraint" not in str(err.value)


def test_the_gpu_engine_takes_the_rules():
    """The GPU engine's model keeps the rules; its tables carry them to the kernels (header words 12-15 of the
    flat table: no_lp, no_gu, no_closing_gu, the span), which are built with ZK_RULES only where a rule is on."""
    from rnapipe.gpu import zuker as gpu_zuker
    from rnapipe.gpu.zuker_tables import NO_SPAN, flat_tables, rules_option

    assert gpu_zuker._gpu_model({"max_bp_span": 150, "no_lp": True}) == Model(max_bp_span=150, no_lp=True)
    assert gpu_zuker._gpu_model({"no_lp": False, "max_bp_span": None}) == Model()
    for rules, words in (({}, [0, 0, 0, NO_SPAN]), ({"no_lp": True}, [1, 0, 0, NO_SPAN]),
                         ({"no_gu": True, "max_bp_span": 40}, [0, 1, 0, 40]),
                         ({"no_closing_gu": True}, [0, 0, 1, NO_SPAN])):
        model = Model(**rules)
        assert flat_tables(model.tables(), 100)[12:16].tolist() == words
        assert rules_option(model) == (("-DZK_RULES",) if rules else ())
    # the rest of the table is the default model's
    plain, ruled = flat_tables(Model().tables(), 100), flat_tables(Model(no_lp=True, max_bp_span=50).tables(), 100)
    assert (plain[:12] == ruled[:12]).all() and (plain[16:] == ruled[16:]).all()


def test_auto_is_not_sent_to_the_cpu_by_the_rules():
    """device='auto' chooses as it would without the rules (the GPU engine and the hybrid take them); here,
    without a GPU, the CPU, and the results are ViennaRNA's."""
    from rnapipe.gpu.devices import gpu_available
    from rnapipe.pipeline.choose import folder_for

    seqs = random_seqs(10, 20, 100, seed=13)
    chosen = []
    folder_for("zuker", None, "auto", 1, None, {"no_lp": True}, chosen=lambda d, why: chosen.append((d, why)))
    assert chosen and "no_lp" not in chosen[0][1]
    if not gpu_available():
        assert chosen[0][0] == "cpu"
    results = rnapipe.fold(seqs, device="auto", threads=1, no_lp=True)
    assert [(r.score_int, r.structure) for r in results] == [vienna(s, no_lp=True) for s in seqs]


def test_journal_header_has_the_rules_that_are_on_only():
    """Options equal to their defaults give the header of a run without them (so such a rerun resumes, and so
    does a journal written before the rules existed); a rule that is on is in it."""
    from rnapipe.pipeline.resume.run import journal_header

    def options(**given):
        return journal_header(["in.fa"], [], "zuker", "default", "error", given)["options"]

    plain = options()
    assert not {"no_lp", "no_gu", "no_closing_gu", "max_bp_span"} & set(plain)
    assert options(no_lp=False, no_gu=False, no_closing_gu=False, max_bp_span=None) == plain
    assert options(no_lp=True) == {**plain, "no_lp": True}
    assert options(max_bp_span=150) == {**plain, "max_bp_span": 150}
    assert options(max_bp_span=150) != options(max_bp_span=151)
