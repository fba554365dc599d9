"""Text split into the tokens SQLite FTS5 indexes with `tokenize='porter unicode61 remove_diacritics 2'`, and a
query into its search terms."""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable

from hindsight.store.porter import stem

# The combining marks of sqlite3Fts5UnicodeIsdiacritic: inside a token they are folded away.
_DIACRITICS = "".join(chr(0x300 + i) for i in range(50) if (0x000361F808029FDF >> i) & 1)
_DROP_DIACRITICS = str.maketrans("", "", _DIACRITICS)

# For `words`: a token is a run of letters, numbers and private-use characters (categories L*, N*, Co) as Python's
# Unicode database has them.
_PRIVATE_USE = "\ue000-\uf8ff\U000f0000-\U0010ffff"
_TOKEN = re.compile(rf"(?:[^\W_]|[{_PRIVATE_USE}])(?:[^\W_]|[{_PRIVATE_USE}{_DIACRITICS}])*")

# unicode61's own tables are of Unicode 6.1, and it takes a code point they lack for a token character: emoji newer
# than 6.1 ("🤔") are tokens, and join the letters beside them, where older ones ("😀") separate words. Its non-ASCII
# token characters, as hex code points and ranges (tests/test_tokenize.py checks them against FTS5):
_UNICODE61_ALNUM = """
aa b2-b3 b5 b9-ba bc-be c0-d6 d8-f6 f8-2c1 2c6-2d1 2e0-2e4 2ec 2ee 370-374 376-37d 37f-383 386 388-3f5 3f7-481
48a-559 560-588 58b-58e 590 5c8-5f2 5f5-5ff 605 61c-61d 620-64a 660-669 66e-66f 671-6d3 6d5 6e5-6e6 6ee-6fc 6ff
70e 710 712-72f 74b-7a5 7b1-7ea 7f4-7f5 7fa-815 81a 824 828 82e-82f 83f-858 85c-85d 85f-8e3 8ff 904-939 93d 950
958-961 966-96f 971-980 984-9bb 9bd 9c5-9c6 9c9-9ca 9ce-9d6 9d8-9e1 9e4-9f1 9f4-9f9 9fc-a00 a04-a3b a3d a43-a46
a49-a4a a4e-a50 a52-a6f a72-a74 a76-a80 a84-abb abd ac6 aca ace-ae1 ae4-aef af2-b00 b04-b3b b3d b45-b46 b49-b4a
b4e-b55 b58-b61 b64-b6f b71-b81 b83-bbd bc3-bc5 bc9 bce-bd6 bd8-bf2 bfb-c00 c04-c3d c45 c49 c4e-c54 c57-c61
c64-c7e c80-c81 c84-cbb cbd cc5 cc9 cce-cd4 cd7-ce1 ce4-d01 d04-d3d d45 d49 d4e-d56 d58-d61 d64-d78 d7a-d81
d84-dc9 dcb-dce dd5 dd7 de0-df1 df5-e30 e32-e33 e3b-e3e e40-e46 e50-e59 e5c-eb0 eb2-eb3 eba ebd-ec7 ece-f00
f20-f33 f40-f70 f88-f8c f98 fbd fcd fdb-102a 103f-1049 1050-1055 105a-105d 1061 1065-1066 106e-1070 1075-1081
108e 1090-1099 10a0-10fa 10fc-135c 1369-138f 139a-13ff 1401-166c 166f-167f 1681-169a 169d-16ea 16ee-1711
1715-1731 1737-1751 1754-1771 1774-17b3 17d7 17dc 17de-17ff 180f-18a8 18aa-191f 192c-192f 193c-193f 1941-1943
1946-19af 19c1-19c7 19ca-19dd 1a00-1a16 1a1c-1a1d 1a20-1a54 1a5f 1a7d-1a7e 1a80-1a9f 1aa7 1aae-1aff 1b05-1b33
1b45-1b59 1b7d-1b7f 1b83-1ba0 1bae-1be5 1bf4-1bfb 1c00-1c23 1c38-1c3a 1c40-1c7d 1c80-1cbf 1cc8-1ccf 1ce9-1cec
1cee-1cf1 1cf5-1dbf 1de7-1dfb 1e00-1fbc 1fbe 1fc2-1fcc 1fd0-1fdc 1fe0-1fec 1ff0-1ffc 1fff 2065-2069 2070-2079
207f-2089 208f-209f 20ba-20cf 20f1-20ff 2102 2107 210a-2113 2115 2119-211d 2124 2126 2128 212a-212d 212f-2139
213c-213f 2145-2149 214e 2150-218f 23f4-23ff 2427-243f 244b-249b 24ea-24ff 2700 2776-2793 2b4d-2b4f 2b5a-2ce4
2ceb-2cee 2cf2-2cf8 2cfd 2d00-2d6f 2d71-2d7e 2d80-2ddf 2e2f 2e3c-2e7f 2e9a 2ef4-2eff 2fd6-2fef 2ffc-2fff
3005-3007 3021-3029 3031-3035 3038-303c 3040-3098 309d-309f 30a1-30fa 30fc-318f 3192-3195 31a0-31bf 31e4-31ff
321f-3229 3248-324f 3251-325f 3280-3289 32b1-32bf 32ff 3400-4dbf 4e00-a48f a4c7-a4fd a500-a60c a610-a66e
a67f-a69e a6a0-a6ef a6f8-a6ff a717-a71f a722-a788 a78b-a801 a803-a805 a807-a80a a80c-a822 a82c-a835 a83a-a873
a878-a87f a882-a8b3 a8c5-a8cd a8d0-a8df a8f2-a8f7 a8fb-a925 a930-a946 a954-a95e a960-a97f a984-a9b2 a9ce-a9dd
a9e0-aa28 aa37-aa42 aa44-aa4b aa4e-aa5b aa60-aa76 aa7a aa7c-aaaf aab1 aab5-aab6 aab9-aabd aac0 aac2-aadd
aae0-aaea aaf2-aaf4 aaf7-abe2 abee-d7ff e000-fb1d fb1f-fb28 fb2a-fbb1 fbc2-fd3d fd40-fdfb fdfe-fdff fe1a-fe1f
fe27-fe2f fe53 fe67 fe6c-fefe ff00 ff10-ff19 ff21-ff3a ff41-ff5a ff66-ffdf ffe7 ffef-fff8 10000-100ff
10103-10136 10140-10178 1018a-1018f 1019c-101cf 101fe-1039e 103a0-103cf 103d1-10856 10858-1091e 10920-1093e
10940-10a00 10a04 10a07-10a0b 10a10-10a37 10a3b-10a3e 10a40-10a4f 10a59-10a7e 10a80-10b38 10b40-10fff
11003-11037 1104e-1107f 11083-110af 110c2-110ff 11103-11126 11135-1113f 11144-1117f 11183-111b2 111c1-111c4
111c9-116aa 116b8-1246f 12474-16f50 16f7f-16f8e 16f93-1cfff 1d0f6-1d0ff 1d127-1d128 1d1de-1d1ff 1d246-1d2ff
1d357-1d6c0 1d6c2-1d6da 1d6dc-1d6fa 1d6fc-1d714 1d716-1d734 1d736-1d74e 1d750-1d76e 1d770-1d788 1d78a-1d7a8
1d7aa-1d7c2 1d7c4-1eeef 1eef2-1efff 1f02c-1f02f 1f094-1f09f 1f0af-1f0b0 1f0bf-1f0c0 1f0d0 1f0e0-1f10f 1f12f
1f16c-1f16f 1f19b-1f1e5 1f203-1f20f 1f23b-1f23f 1f249-1f24f 1f252-1f2ff 1f321-1f32f 1f336 1f37d-1f37f
1f394-1f39f 1f3c5 1f3cb-1f3df 1f3f1-1f3ff 1f43f 1f441 1f4f8 1f4fd-1f4ff 1f53e-1f53f 1f544-1f54f 1f568-1f5fa
1f641-1f644 1f650-1f67f 1f6c6-1f6ff 1f774-e0000 e0002-e001f e0080-e00ff e01f0-10ffff
"""
# Letters newer than 6.1 that Python case-folds and unicode61 keeps as they are.
_UNICODE61_UNFOLDED = """
1e1 37f 528 52a 52c 52e 13f8-13fd 1c80-1c88 1c90-1cba 1cbd-1cbf 2c2f a698 a69a a796 a798 a79a a79c a79e
a7ab-a7ae a7b0-a7b4 a7b6 a7b8 a7ba a7bc a7be a7c0 a7c2 a7c4-a7c7 a7c9 a7d0 a7d6 a7d8 a7f5 ab70-abbf 104b0-104d3
10570-1057a 1057c-1058a 1058c-10592 10594-10595 10c80-10cb2 118a0-118bf 16e40-16e5f 1e900-1e921
"""


def _ranges(spec: str) -> list[tuple[int, int]]:
    """The code point ranges of a spec of space-separated hex code points and ranges ("aa b2-b3")."""
    out = []
    for item in spec.split():
        first, _, last = item.partition("-")
        out.append((int(first, 16), int(last or first, 16)))
    return out


_ALNUM61 = "0-9A-Za-z" + "".join(f"{chr(a)}-{chr(b)}" for a, b in _ranges(_UNICODE61_ALNUM))
_TOKEN61 = re.compile(f"[{_ALNUM61}][{_ALNUM61}{_DIACRITICS}]*")
_UNFOLDED61 = frozenset(chr(c) for a, b in _ranges(_UNICODE61_UNFOLDED) for c in range(a, b + 1))


@functools.lru_cache(maxsize=8192)
def _fold_char(c: str) -> str:
    """A non-ASCII character case-folded, and a Latin letter stripped of its diacritics, as unicode61 does."""
    folded = c.casefold()
    c = folded if len(folded) == 1 else c.lower()  # unicode61 folds one character to one ("ß" stays)
    base = unicodedata.normalize("NFD", c)[0]
    return base if base.isascii() and base.isalpha() else c


@functools.lru_cache(maxsize=8192)
def _fold_char61(c: str) -> str:
    """A non-ASCII character folded exactly as unicode61 (remove_diacritics 2) folds it."""
    if c in _UNFOLDED61:
        return c
    return "\u01e1" if c == "\u01e0" else _fold_char(c)  # its diacritic table lacks "ǡ", so "Ǡ" only lower-cases


def _split(text: str, token: re.Pattern[str], fold: Callable[[str], str]) -> list[str]:
    """The runs `token` finds in text, lower-cased, or folded character by character when not ASCII."""
    if text.isascii():
        return token.findall(text.lower())
    out = []
    for word in token.findall(text):
        if word.isascii():
            out.append(word.lower())
        else:
            out.append("".join(fold(c) for c in word.translate(_DROP_DIACRITICS)))
    return out


def words(text: str) -> list[str]:
    """The tokens of text folded as unicode61 folds them, but told apart by Python's Unicode database, which differs
    from unicode61's at characters newer than Unicode 6.1 (`unicode61_words` is exact). The Postgres store's terms."""
    return _split(text, _TOKEN, _fold_char)


def unicode61_words(text: str) -> list[str]:
    """The tokens of text exactly as FTS5's unicode61 tokenizer (remove_diacritics 2) gives them to the stemmer."""
    return _split(text, _TOKEN61, _fold_char61)


def tokens(text: str) -> list[str]:
    """The terms FTS5 indexes for text in one column, in order: its words, each stemmed."""
    return list(map(stem, unicode61_words(text)))


_WORD = re.compile(r"\w+", re.UNICODE)
# Function words carry no topical signal and make OR-queries match everything.
_STOPWORDS = frozenset(
    [
    'a', 'about', 'above', 'after', 'again', 'against', 'all', 'am', 'an', 'and', 'any', 'are', 'as', 'at',
    'be', 'because', 'been', 'before', 'being', 'below', 'between', 'both', 'but', 'by', 'can', 'could', 'did',
    'do', 'does', 'doing', 'down', 'during', 'each', 'few', 'for', 'from', 'further', 'had', 'has', 'have',
    'having', 'he', 'her', 'here', 'hers', 'herself', 'him', 'himself', 'his', 'how', 'i', 'if', 'in', 'into',
    'is', 'it', 'its', 'itself', 'just', 'me', 'more', 'most', 'my', 'myself', 'no', 'nor', 'not', 'now', 'of',
    'off', 'on', 'once', 'only', 'or', 'other', 'our', 'ours', 'ourselves', 'out', 'over', 'own', 'same', 'she',
    'should', 'so', 'some', 'such', 'than', 'that', 'the', 'their', 'theirs', 'them', 'themselves', 'then',
    'there', 'these', 'they', 'this', 'those', 'through', 'to', 'too', 'under', 'until', 'up', 'very', 'was',
    'we', 'were', 'what', 'when', 'where', 'which', 'while', 'who', 'whom', 'why', 'will', 'with', 'would',
    'you', 'your', 'yours', 'yourself', 'yourselves',
    # What the tokenizer leaves of contractions ("I've" -> "i", "ve"). "don" and "won" stay: they are also words.
    'ain', 'aren', 'couldn', 'didn', 'doesn', 'hadn', 'hasn', 'haven', 'isn', 'll', 'mightn', 'mustn', 'needn',
    're', 'shan', 'shouldn', 've', 'wasn', 'weren', 'wouldn',
]
)
_MAX_QUERY_TERMS = 32


def query_terms(text: str) -> list[str]:
    """The searchable terms of free text: lower-cased words minus stopwords, deduplicated, in order."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(text.lower()):
        # A lone letter is mostly a clitic split off by the tokenizer ("Maya's" -> "maya", "s").
        if (len(word) > 1 or word.isdigit()) and word not in _STOPWORDS and word not in seen:
            seen[word] = None
    return list(seen)[:_MAX_QUERY_TERMS]
