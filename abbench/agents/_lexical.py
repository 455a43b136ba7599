"""Lexical matching for the builtin agent: a tokenizer that handles Chinese and a small BM25 index."""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

# Han (with extension A and compatibility ideographs), kana and hangul: scripts written without spaces.
_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"
_RUNS = re.compile(rf"([{_CJK}]+)|([a-z0-9]+)")
_CJK_CHAR = re.compile(rf"[{_CJK}]")

# Function characters that carry no topic in Chinese. Dropped as unigrams; a bigram is dropped only when
# both of its characters are here ("帮我", "一下"), so content bigrams like "我的车" keep "的车".
_CJK_STOP = frozenset(
    "的了吗呢吧啊呀嘛哦哈么我你您他她它们这那个一下帮请把给是在有要想就还也都和与及或让用点吗嗯"
)

_EN_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "to",
        "of",
        "in",
        "on",
        "for",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "am",
        "i",
        "me",
        "my",
        "we",
        "our",
        "you",
        "your",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "please",
        "can",
        "could",
        "would",
        "will",
        "shall",
        "do",
        "does",
        "did",
        "have",
        "has",
        "had",
        "at",
        "by",
        "with",
        "from",
        "as",
        "so",
        "just",
    ]
)

_SUFFIXES = (
    "ational",
    "ation",
    "ments",
    "ment",
    "ings",
    "ing",
    "ies",
    "ied",
    "ed",
    "es",
    "al",
    "ly",
    "s",
    "e",
)

UNIGRAM_WEIGHT = 0.5
"""Query weight of a single CJK character relative to a bigram or a Latin word."""


def stem(word: str) -> str:
    """A light English stemmer: strips one common suffix so ``arrived``/``arrival``/``arrive`` meet."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiou":
        word = word[:-1]  # "transferr" -> "transfer"
    return word


def normalize(text: str) -> str:
    """NFKC and case folding, so full-width digits and letters match their ASCII forms."""
    return unicodedata.normalize("NFKC", text).casefold()


def tokens(text: str) -> list[tuple[str, float]]:
    """Terms of `text` with their query weights.

    CJK runs give character bigrams (weight 1) and unigrams (weight `UNIGRAM_WEIGHT`); Latin-script words
    and numbers are split on anything that is not a letter or digit, stop words dropped, lightly stemmed.
    """
    out: list[tuple[str, float]] = []
    for cjk, word in _RUNS.findall(normalize(text)):
        if cjk:
            for i, ch in enumerate(cjk):
                if ch not in _CJK_STOP:
                    out.append((ch, UNIGRAM_WEIGHT))
                if i + 1 < len(cjk):
                    pair = cjk[i : i + 2]
                    if not (pair[0] in _CJK_STOP and pair[1] in _CJK_STOP):
                        out.append((pair, 1.0))
        elif word not in _EN_STOP:
            out.append((word if word.isdigit() else stem(word), 1.0))
    return out


def terms(text: str) -> Counter[str]:
    """Term frequencies of `text` (see `tokens`), as a document is indexed."""
    return Counter(t for t, _ in tokens(text))


def query_terms(parts: Iterable[tuple[str, float]]) -> dict[str, float]:
    """Weighted query terms from ``(text, weight)`` parts: each term keeps its largest weight."""
    query: dict[str, float] = {}
    for text, weight in parts:
        if not text or weight <= 0:
            continue
        for term, w in tokens(text):
            query[term] = max(query.get(term, 0.0), w * weight)
    return query


def cjk_share(text: str) -> float:
    """The share of CJK characters among the letters of `text` (0 when it has none)."""
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return 0.0
    return sum(1 for c in letters if _CJK_CHAR.match(c)) / len(letters)


def count_cjk(text: str) -> int:
    """How many CJK characters `text` holds."""
    return len(_CJK_CHAR.findall(text))


@dataclass(frozen=True)
class Bm25:
    """Okapi BM25 over a fixed list of documents, with weighted query terms.

    Attributes:
        docs: Term frequencies per document.
        k1: Term-frequency saturation.
        b: Length normalisation (0 = none, 1 = full).
    """

    docs: tuple[Counter[str], ...]
    k1: float = 1.2
    b: float = 0.75
    # derived from the documents in __post_init__
    _postings: dict[str, list[tuple[int, int]]] = field(init=False, repr=False, compare=False)
    _norms: list[float] = field(init=False, repr=False, compare=False)
    _idf: dict[str, float] = field(init=False, repr=False, compare=False)
    _unseen_idf: float = field(init=False, repr=False, compare=False)

    @classmethod
    def build(cls, texts: Sequence[str], k1: float = 1.2, b: float = 0.75) -> Bm25:
        """Index `texts`, one document each."""
        return cls(tuple(terms(t) for t in texts), k1, b)

    def __post_init__(self) -> None:
        # postings make a query cost what its terms occur, not what the index holds
        postings: dict[str, list[tuple[int, int]]] = {}
        for i, doc in enumerate(self.docs):
            for term, tf in doc.items():
                postings.setdefault(term, []).append((i, tf))
        lengths = [sum(d.values()) for d in self.docs]
        avgdl = (sum(lengths) / len(lengths)) if lengths else 1.0
        norms = [self.k1 * (1.0 - self.b + self.b * n / (avgdl or 1.0)) for n in lengths]
        n = len(self.docs)
        idf = {t: math.log(1.0 + (n - len(p) + 0.5) / (len(p) + 0.5)) for t, p in postings.items()}
        object.__setattr__(self, "_postings", postings)
        object.__setattr__(self, "_norms", norms)
        object.__setattr__(self, "_idf", idf)
        object.__setattr__(self, "_unseen_idf", math.log(1.0 + (n + 0.5) / 0.5))

    @property
    def idf_single(self) -> float:
        """The idf of a term found in exactly one document: the scale of "one distinctive word" here."""
        n = len(self.docs)
        return math.log(1.0 + (n - 0.5) / 1.5)

    def idf(self, term: str) -> float:
        """Inverse document frequency (the "+1" form, never negative); unseen terms get the largest."""
        return self._idf.get(term, self._unseen_idf)

    def information(self, text: str) -> float:
        """The information (weight × idf) of the terms of `text`, as a query."""
        return sum(w * self.idf(t) for t, w in query_terms([(text, 1.0)]).items())

    def match(self, query: Mapping[str, float]) -> Match:
        """BM25 score and shared information of every document for the weighted `query`."""
        scores = [0.0] * len(self.docs)
        shared = [0.0] * len(self.docs)
        k1 = self.k1
        for term, weight in query.items():
            postings = self._postings.get(term)
            if not postings:
                continue
            idf = self.idf(term)
            for i, tf in postings:
                scores[i] += weight * idf * tf * (k1 + 1.0) / (tf + self._norms[i])
                shared[i] += weight * idf
        total = sum(w * self.idf(t) for t, w in query.items())
        return Match(scores, shared, total)

    def scores(self, query: Mapping[str, float]) -> list[float]:
        """BM25 score of every document, in index order."""
        return self.match(query).scores


@dataclass(frozen=True, slots=True)
class Match:
    """How well one query matches each document of a `Bm25` index.

    Attributes:
        scores: BM25 score per document.
        shared: Per document, the query information (weight × idf) it contains: how much of substance
            the two have in common, whatever the document's length.
        total: The query's whole information, so ``shared[i] / total`` is the share covered.
    """

    scores: list[float]
    shared: list[float]
    total: float

    def coverage(self, i: int) -> float:
        """The share of the query's information that document `i` contains, 0..1."""
        return self.shared[i] / self.total if self.total > 0 else 0.0
