"""Turning text into tokens and tokens into indices (introduced in notebook 03)."""

import collections
import re
from collections.abc import Iterable, Sequence

from d2lmini.i18n import _

UNK = "<unk>"


def preprocess(text: str) -> str:
    """Lower-case `text` and replace every run of non-letters by one space.

    This is the preprocessing of the whole course: the alphabet is `a`-`z` and space.
    """
    return re.sub("[^a-z]+", " ", text.lower())


def tokenize(text: str, level: str = "char") -> list[str]:
    """Split `text` into characters (`level="char"`) or words (`level="word"`)."""
    if level == "char":
        return list(text)
    if level == "word":
        return text.split()
    raise ValueError(_("level must be 'char' or 'word', not {level}").format(level=repr(level)))


class Vocab:
    """A vocabulary: index 0 is `<unk>`, then tokens from most to least frequent.

    Ties in frequency are broken alphabetically, so the same text always gives the
    same vocabulary. `vocab[token]` and `vocab.indices(tokens)` map tokens to indices
    (unknown tokens map to 0); `vocab.to_tokens(indices)` maps back.
    """

    def __init__(self, tokens: Iterable[str] = (), min_freq: int = 0):
        self.counts = collections.Counter(tokens)
        # most frequent first; equal counts in alphabetical order
        ranked = sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0]))
        self.idx_to_token = [UNK] + [t for t, n in ranked if n >= min_freq and t != UNK]
        self.token_to_idx = {t: i for i, t in enumerate(self.idx_to_token)}

    def __len__(self) -> int:
        return len(self.idx_to_token)

    def __getitem__(self, token: str) -> int:
        return self.token_to_idx.get(token, self.unk)

    def __contains__(self, token: str) -> bool:
        return token in self.token_to_idx

    @property
    def unk(self) -> int:
        """Index of the unknown token (always 0)."""
        return 0

    def indices(self, tokens: Iterable[str]) -> list[int]:
        """Return the index of every token in `tokens` (unknown tokens give 0)."""
        return [self[t] for t in tokens]

    def to_tokens(self, indices: Sequence[int]) -> list[str]:
        """Return the token of every index in `indices`."""
        return [self.idx_to_token[int(i)] for i in indices]

    def decode(self, indices: Sequence[int]) -> str:
        """Join the character tokens of `indices` into a string."""
        return "".join(self.to_tokens(indices))

    def unknown_characters(self, text: str) -> list[str]:
        """Return the distinct characters of `text` that are not in the vocabulary."""
        return sorted({c for c in text if c not in self.token_to_idx})
