"""How long the similarity evidence takes: copydetect's fingerprints, and difflib as it was (#43 item 2).

    python benchmarks/similarity.py [--difflib]

Cases: a pair of unrelated 8,000-token functions (tests/test_grading_similarity.py's
`long_function`), and a class of 100 with one 300-token function each (every pair compared).
`--difflib` also times the old measure (difflib.SequenceMatcher on the same tokens) on the pair
of 8,000 tokens.

On a shared 2-core machine, niced (copydetect 0.5.0, Python 3.11):

| case | seconds | result |
|---|---|---|
| tokens of two 8,000-token functions | 0.32 s | [8061, 8010] |
| fingerprints and likeness of that pair | 0.02 s | [0.518] |
| class of 100 (300 tokens each), 4,950 pairs | 1.45 s | 4950 pairs |
| difflib on the 8,000-token pair | 2.66 s | 0.11 |

difflib's time depends on how alike the tokens are (these statements carry random constants):
tests/test_grading_similarity.py counts 3.4 times the calls for functions twice as long with
difflib, 2 times with the fingerprints; the issue measured 90 s for one pair of 8,000 tokens.
"""

import argparse
import sys
import time
from difflib import SequenceMatcher
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from test_grading_similarity import long_function  # noqa: E402

from d2lmini.grading.judging.evidence import canonical_tokens, fingerprint  # noqa: E402
from d2lmini.grading.judging.similarity import alike_pairs  # noqa: E402


def timed(label: str, work) -> None:
    """Print `label` and the seconds `work()` took."""
    start = time.perf_counter()
    result = work()
    print(f"| {label} | {time.perf_counter() - start:.2f} s | {result} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--difflib", action="store_true", help="also time difflib on the 8,000-token pair")
    args = parser.parse_args()
    pair = {name: {"e": {"f": long_function(seed, 530)}} for seed, name in enumerate(("ada", "bob"))}
    class_ = {f"s{i:03}": {"e": {"f": long_function(i, 25)}} for i in range(100)}
    print("| case | seconds | result |\n|---|---|---|")
    timed("import copydetect (once per process)",
          lambda: fingerprint(canonical_tokens(long_function(9, 5))) and "done")
    timed("tokens of two 8,000-token functions",
          lambda: [len(canonical_tokens(s["e"]["f"])) for s in pair.values()])
    timed("fingerprints and likeness of that pair",
          lambda: [p.ratio for p in alike_pairs(pair, threshold=0.0)])
    timed("class of 100 (300 tokens each), 4,950 pairs",
          lambda: f"{len(alike_pairs(class_, threshold=0.0))} pairs")
    if args.difflib:
        a, b = (canonical_tokens(s["e"]["f"]) for s in pair.values())
        timed("difflib on the 8,000-token pair",
              lambda: round(SequenceMatcher(None, a, b, autojunk=False).ratio(), 3))


if __name__ == "__main__":
    main()
