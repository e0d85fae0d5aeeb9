"""Smoothed character n-gram models: interpolated Kneser-Ney (notebooks 01 and 07).

A `KneserNey(order)` model predicts the next character from the previous `order - 1`.
Every order k = 1..order contributes, from the lowest up:

    p_k(w | h) = (max(c_k(h w) - d, 0) + d * T_k(h) * p_{k-1}(w | h')) / C_k(h)

where h' is h without its oldest character, c_k is the raw count for the highest order
and the continuation count N1+(. h w) (how many distinct characters precede h w) below
it, C_k(h) = sum over w of c_k(h w), T_k(h) = how many w have c_k(h w) > 0, and p_0 is
uniform over the vocabulary. A context never seen (C_k(h) = 0) passes p_{k-1} through.
Counts are kept as sorted integer codes of the n-grams (numpy), so fitting and scoring
are vectorised.
"""

import math

import numpy as np

from d2lmini.i18n import _

LN2 = math.log(2)


def gram_codes(ids: np.ndarray, k: int, base: int) -> np.ndarray:
    """Return the integer code of every k-gram of `ids`, oldest character in the highest digit (notebook 07).

    With `base` symbols, the k-gram (a, b, c) gets the code a*base^2 + b*base + c, so a
    context is its code // base and dropping the oldest character is code % base^(k-1).
    """
    codes = np.zeros(len(ids) - k + 1, dtype=np.int64)
    for j in range(k):
        codes = codes * base + ids[j : len(ids) - k + 1 + j]
    return codes


def lookup(keys: np.ndarray, values: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """Return values[i] where keys[i] == query (keys sorted), else 0, for every query (notebook 07)."""
    pos = np.searchsorted(keys, queries)
    pos = np.minimum(pos, len(keys) - 1)
    return np.where(keys[pos] == queries, values[pos], 0)


def count_tables(ids: np.ndarray, order: int, size: int) -> list[tuple[np.ndarray, ...]]:
    """Return, for k = 1 ... order, the counts a Kneser-Ney model of `ids` needs (notebook 07).

    Table k is (codes, counts, contexts, totals, types): the sorted codes of the k-grams
    and their counts (raw counts for k = order, continuation counts N1+(. w) below), the
    sorted contexts, and for each context C_k(h), the sum of its counts, and T_k(h), how
    many different characters follow it.
    """
    tables = []
    for k in range(1, order + 1):
        if k == order:
            codes, counts = np.unique(gram_codes(ids, k, size), return_counts=True)
        else:  # continuation counts: distinct (k+1)-grams, oldest character dropped
            longer = np.unique(gram_codes(ids, k + 1, size))
            codes, counts = np.unique(longer % size**k, return_counts=True)
        contexts, owner = np.unique(codes // size, return_inverse=True)
        totals = np.bincount(owner, weights=counts).astype(np.int64)
        types = np.bincount(owner)
        tables.append((codes, counts, contexts, totals, types))
    return tables


def interpolated_probs(tables, windows: np.ndarray, lengths: np.ndarray, size: int,
                       discount: float, floor: bool = True) -> np.ndarray:
    """Return p(last id | the ids before it) for each row of `windows` (m, order) (notebook 07).

    Starts from the uniform 1/size and mixes in one order after another,
    p_k = (max(c_k - d, 0) + d T_k(h) p_{k-1}) / C_k(h), where the context was seen.
    Only the last `lengths[i]` ids of row i are real (text start); shorter rows stop early.
    `floor=False` makes the lowest order the continuation unigram alone.
    """
    order = windows.shape[1]
    prob = np.full(len(windows), 1.0 / size)
    code = np.zeros(len(windows), dtype=np.int64)
    for k, (codes, counts, contexts, totals, types) in enumerate(tables, start=1):
        code = code + windows[:, order - k] * size ** (k - 1)
        context = code // size
        total = lookup(contexts, totals, context)
        count = lookup(codes, counts, code)
        seen = (total > 0) & (lengths >= k)
        if k == 1 and not floor:
            mixed = count / np.maximum(total, 1)
        else:
            kinds = lookup(contexts, types, context)
            mixed = (np.maximum(count - discount, 0) + discount * kinds * prob) / np.maximum(total, 1)
        prob = np.where(seen, mixed, prob)
    return prob


class KneserNey:
    """Interpolated Kneser-Ney character n-gram of a given `order` (n); see the module docstring.

    `discount` is the absolute discount d (0 < d < 1). With `floor=False` the lowest order
    is the continuation unigram alone (no uniform floor), as in NLTK's
    `KneserNeyInterpolated`; characters never seen then get probability 0.
    """

    def __init__(self, order: int, discount: float = 0.75, floor: bool = True):
        if not isinstance(order, int) or order < 1:
            raise ValueError(_("order must be an integer >= 1, got {order}").format(order=repr(order)))
        if not 0 < discount < 1:
            raise ValueError(_("discount must be in (0, 1), got {discount}").format(discount=repr(discount)))
        self.order, self.discount, self.floor = order, discount, floor
        self.symbols: str | None = None

    def fit(self, text: str, symbols: str | None = None) -> "KneserNey":
        """Count the n-grams of `text` over `symbols` (default: the characters of `text`); return self."""
        self.symbols = "".join(sorted(set(symbols if symbols is not None else text)))
        self._index = {c: i for i, c in enumerate(self.symbols)}
        size = len(self.symbols)
        if size ** self.order >= 2**62:
            raise ValueError(_("order {order} is too high for {size} symbols (codes overflow int64)").format(
                order=self.order, size=size))
        if len(text) <= self.order:
            raise ValueError(_("text must be longer than order={order}, got {length} characters").format(
                order=self.order, length=len(text)))
        self._tables = count_tables(self._ids(text), self.order, size)
        return self

    def _ids(self, text: str) -> np.ndarray:
        try:
            return np.array([self._index[c] for c in text], dtype=np.int64)
        except KeyError as error:
            # TRANSLATORS: symbols= and fit are code, kept as they are.
            raise ValueError(_("character {character} is not in the model's symbols {symbols}; pass symbols= "
                               "to fit").format(character=repr(error.args[0]),
                                                symbols=repr(self.symbols))) from None

    def _validate_fitted(self) -> None:
        if self.symbols is None:
            raise RuntimeError(_("call fit(text) before asking for probabilities"))

    def _score(self, windows: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """Probabilities of the last id of each row of `windows` (m, order) given the ids before it.

        Only the last `lengths[i]` ids of row i are real (text start); shorter rows use lower orders.
        """
        return interpolated_probs(self._tables, windows, lengths, len(self.symbols), self.discount,
                                  self.floor)

    def _windows(self, ids: np.ndarray, start: int) -> tuple[np.ndarray, np.ndarray]:
        padded = np.concatenate([np.zeros(self.order - 1, dtype=np.int64), ids])
        windows = np.lib.stride_tricks.sliding_window_view(padded, self.order)[start:]
        lengths = np.minimum(np.arange(start, len(ids)) + 1, self.order)
        return windows, lengths

    def log_probs(self, text: str, history: str = "") -> np.ndarray:
        """Return ln p(text[i] | history + text[:i]) for every position i (numpy float64 array)."""
        self._validate_fitted()
        windows, lengths = self._windows(self._ids(history + text), len(history))
        with np.errstate(divide="ignore"):
            return np.log(self._score(windows, lengths))

    def distribution(self, context: str) -> np.ndarray:
        """Return p(w | context) for every w in `self.symbols`, in that order (sums to 1)."""
        self._validate_fitted()
        size = len(self.symbols)
        tail = self._ids(context)[-(self.order - 1):] if self.order > 1 else np.zeros(0, np.int64)
        rows = np.zeros((size, self.order), dtype=np.int64)
        rows[:, self.order - 1 - len(tail) : self.order - 1] = tail
        rows[:, -1] = np.arange(size)
        return self._score(rows, np.full(size, len(tail) + 1))

    def prob(self, context: str, char: str) -> float:
        """Return p(char | context)."""
        self._validate_fitted()
        return float(self.distribution(context)[self._ids(char)[0]])


def kneser_ney_bits(train_text: str, valid_text: str, order: int, discount: float = 0.75) -> float:
    """Return bits per character of `valid_text` under a KN `order`-gram fitted on `train_text`.

    The context is carried across the boundary: the first held-out characters are predicted
    from the end of the training text. Notebooks 01 and 07.
    """
    model = KneserNey(order, discount).fit(train_text, symbols=train_text + valid_text)
    return float(-model.log_probs(valid_text, history=train_text[-(order - 1):] if order > 1 else "")
                 .mean() / LN2)


def kneser_ney_ladder(train_text: str, valid_text: str, orders=range(2, 9),
                      discount: float = 0.75) -> dict[int, float]:
    """Return {n: held-out bits per character} of KN n-grams for each n in `orders` (notebooks 01, 07)."""
    return {n: kneser_ney_bits(train_text, valid_text, n, discount) for n in orders}


def unseen_fraction(train_text: str, valid_text: str, order: int) -> float:
    """Return the fraction of held-out `order`-grams that never occur in the training text (notebook 01)."""
    symbols = "".join(sorted(set(train_text + valid_text)))
    index = {c: i for i, c in enumerate(symbols)}
    train = gram_codes(np.array([index[c] for c in train_text], np.int64), order, len(symbols))
    valid = gram_codes(np.array([index[c] for c in valid_text], np.int64), order, len(symbols))
    return float(np.mean(~np.isin(valid, train)))
