"""Deterministic English-like text, and the one-sentence edit of the text pipeline.

Words are drawn by rank (Zipf's law, as in English prose): the common words below, most frequent
first, and beyond them a long tail of invented words built from English syllables, so an 8 KB
text holds a few hundred distinct words as prose does. Sentences run 6 to 26 words with an
occasional comma; a blank line ends a paragraph every few sentences. The same seed gives the
same text on every machine (``random.Random`` is specified to). zstd at level 3 shrinks 8 KB of
it 2.2 times, about as much as 8 KB of the GPL, of vim's manual or of this repository's docs
(2.2 to 2.5 times); it holds about 500 distinct words, as 8 KB of the manual does.
"""

from __future__ import annotations

import bisect
import itertools
import random
import re
import zlib
from collections.abc import Sequence
from typing import TypeVar

__all__ = ["edit", "text"]

T = TypeVar("T")
_COMMON = """
the of and to a in is that it for was on are as with be by this not or from at have an but
they which one you all were we can there their has been more will if when would what so no
about out up its into than them only other some time could these two may then do first any
like now my such our over me even most made after also did many before must through back
where much your way well down should because each just those people how too little state good
very make world still own see men work long here get both between life being under never day
same another know while last might us great old year off come since against go came right used
take three states himself few house use during without again place around however home small
found thought went say part once general high upon school every does got united left number
course war until always away something fact though water less public put think almost hand
enough far took head yet government system better set told nothing night end why called
didn't eyes find going look asked later knew point next program city business give group toward
young days let room president side social given present several order national possible rather
second face per among form important often things looked early white case john become large big
need four within felt along children saw best church ever least power development light thing
seemed family interest want members mind country area others done turned although open god
service problem certain kind different thus began door help sense whole matter perhaps itself
york times law human line above name example action company hands local show whether five
history gave today either act feet across taken past quite anything having seen death experience
body word half really week free field car words order question true job
"""
_COMMON_WORDS = _COMMON.split()
_ONSETS = "b bl br c ch cl cr d dr f fl fr g gl gr h j k l m n p pl pr qu r s sh sl st t th tr v w"
_VOWELS = "a e i o u ai ea ee ie oo ou"
_CODAS = "- - - - b ck d ft g l ll m n nd ng nt p r rd rn s sh ss st t th x"
_SUFFIXES = "- - - - - - ed ing er ly s tion ment ness al ous ive"
#: Words beyond the common list: their ranks continue the common list's.
_TAIL = 1500
#: The exponent of the ranks' weights (a word of rank r is drawn with weight r ** -_ZIPF).
_ZIPF = 1.15
_SENTENCE = re.compile(r"[^.]+\.\s*")


def _pick(rng: random.Random, choices: Sequence[T]) -> T:
    """Return one of ``choices``: from ``rng.random()`` alone, the one draw whose sequence
    Python keeps from version to version (``choice`` and ``randint`` may change)."""
    return choices[int(rng.random() * len(choices))]


def _tail_word(rank: int) -> str:
    """Return the invented word of ``rank`` (the same on every call): one to three syllables."""
    rng = random.Random(rank)
    syllables = [
        _pick(rng, _ONSETS.split()) + _pick(rng, _VOWELS.split()) + _pick(rng, _CODAS.split())
        for _ in range(_pick(rng, (1, 2, 2, 2, 3)))
    ]
    return "".join([*syllables, _pick(rng, _SUFFIXES.split())]).replace("-", "")


_WORDS = _COMMON_WORDS + [_tail_word(rank) for rank in range(_TAIL)]
_CUMULATIVE = list(itertools.accumulate(1 / (rank + 1) ** _ZIPF for rank in range(len(_WORDS))))


def _word(rng: random.Random) -> str:
    return _WORDS[bisect.bisect(_CUMULATIVE, rng.random() * _CUMULATIVE[-1])]


def _sentence(rng: random.Random, words_in: int = 0) -> str:
    words = [_word(rng) for _ in range(words_in or _pick(rng, range(6, 27)))]
    if len(words) > 10 and rng.random() < 0.4:
        words[_pick(rng, range(3, len(words) - 3))] += ","
    return " ".join(words).capitalize() + "."


def text(size: int, seed: int = 0) -> str:
    """Return English-like text of at most ``size`` characters (all ASCII), whole sentences.

    Args:
        size: the most characters the text may hold; it stops at the last sentence that fits.
        seed: which text: the same seed gives the same text.
    """
    rng = random.Random(seed)
    out: list[str] = []
    length = 0
    while True:
        sentence = _sentence(rng)
        gap = "\n\n" if out and rng.random() < 0.2 else " " if out else ""
        if length + len(gap) + len(sentence) > size:
            return "".join(out)
        out += [gap, sentence]
        length += len(gap) + len(sentence)


def edit(prose: str) -> str:
    """Return ``prose`` with one sentence replaced by a new one as long in words, both chosen
    by its checksum.

    A pure function of the text, so every engine's pipeline makes the same texts in turn.
    """
    rng = random.Random(zlib.crc32(prose.encode()))
    sentences = [m.span() for m in _SENTENCE.finditer(prose)]
    start, end = _pick(rng, sentences)
    old = prose[start:end]
    tail = old[len(old.rstrip()) :]  # keep the gap that followed it
    return prose[:start] + _sentence(rng, len(old.split())) + tail + prose[end:]
