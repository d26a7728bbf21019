"""A SentencePiece-style BPE vocabulary, trained here, and the encoder llama.cpp runs on it.

Vocabulary layout (what tokenizer.ggml.model = "llama" expects):

    0 <unk> (type 2, unknown)   1 <s> (type 3, control)   2 </s> (type 3, control)
    3..258 <0x00>..<0xFF> (type 6, byte)
    259..   merged pieces, best first (score -rank), then the single characters (type 1, normal)

Spaces are written as U+2581 "▁", and one is put in front of every text segment (at the start
and after each special token), as llama.cpp does for "llama" vocabularies. The newline is not a
piece: it is spelled <0x0A>, like any character the vocabulary lacks.

Training: the text is cut into chunks (a word with its leading "▁", a punctuation mark, a
"<|role|>" tag) and the most frequent adjacent pair inside chunks is merged, repeatedly, until
the vocabulary has the requested size. A merged piece gets score -rank, so the encoder below
(llama.cpp's: merge the adjacent pair whose concatenation is the best-scored token, leftmost
first on ties) applies merges in the order they were learned.

Encoding: `encode()` runs that algorithm. No piece contains "▁" except at its start, and none
mixes letters with other characters, so no merge can cross a chunk boundary and the text can
be encoded chunk by chunk with a cache (fast for the corpus); `encode_segment_slow()` runs on
the whole segment for checking that claim.
"""

import heapq
import re
from collections import Counter, defaultdict

SPACE = "\u2581"
UNK, BOS, EOS = 0, 1, 2
N_SPECIAL = 3
BYTE_BASE = 3  # <0xXX> = BYTE_BASE + byte
FIRST_PIECE = BYTE_BASE + 256

TYPE_NORMAL, TYPE_UNKNOWN, TYPE_CONTROL, TYPE_BYTE = 1, 2, 3, 6

# A "<|role|>" tag, a run of letters, or any other single character; each may carry one
# leading "▁". A bare "▁" (before a newline or at the end) is its own chunk. The alternatives
# tile every text.
CHUNK_RE = re.compile(SPACE + r"?(?:<\|[a-z]+\|>|[A-Za-z]+|[^A-Za-z" + SPACE + r"])|" + SPACE)
SPECIAL_RE = re.compile(r"(<s>|</s>|<unk>)")
SPECIAL_IDS = {"<unk>": UNK, "<s>": BOS, "</s>": EOS}


def escape(text):
    return text.replace(" ", SPACE)


def segments(text, parse_special):
    """(is_special, text) parts, as llama.cpp partitions a text on special tokens."""
    if not parse_special:
        return [(False, text)]
    parts = []
    for i, part in enumerate(SPECIAL_RE.split(text)):
        if part:
            parts.append((i % 2 == 1, part))
    return parts


def train_bpe(texts, vocab_size, parse_special=True):
    """Learn pieces from `texts`; returns (pieces, scores) for ids FIRST_PIECE.. in order."""
    chunk_counts = Counter()
    for text in texts:
        for special, seg in segments(text, parse_special):
            if not special:
                chunk_counts.update(CHUNK_RE.findall(SPACE + escape(seg)))
    chars = Counter()
    for chunk, n in chunk_counts.items():
        for c in chunk:
            chars[c] += n
    alphabet = sorted(c for c in chars if c != "\n")
    n_merges = vocab_size - FIRST_PIECE - len(alphabet)
    if n_merges < 0:
        raise ValueError("vocab_size %d is too small for %d characters" % (vocab_size, len(alphabet)))

    # Words as lists of symbols; pair counts with the words they occur in.
    words = [list(chunk) for chunk in chunk_counts]
    freqs = [chunk_counts[chunk] for chunk in chunk_counts]
    pair_counts = Counter()
    where = defaultdict(set)
    for wi, w in enumerate(words):
        for a, b in zip(w, w[1:]):
            pair_counts[a, b] += freqs[wi]
            where[a, b].add(wi)

    merges = []
    known = set(alphabet)
    while len(merges) < n_merges and pair_counts:
        # Most frequent pair; ties go to the smallest pair so the result is deterministic.
        best = min(pair_counts.items(), key=lambda kv: (-kv[1], kv[0]))[0]
        if pair_counts[best] < 2:
            break
        a, b = best
        merged = a + b
        for wi in sorted(where.pop(best, ())):
            w = words[wi]
            f = freqs[wi]
            for x, y in zip(w, w[1:]):
                pair_counts[x, y] -= f
                if pair_counts[x, y] <= 0:
                    del pair_counts[x, y]
            out = []
            i = 0
            while i < len(w):
                if i + 1 < len(w) and w[i] == a and w[i + 1] == b:
                    out.append(merged)
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            words[wi] = out
            for x, y in zip(out, out[1:]):
                pair_counts[x, y] += f
                where[x, y].add(wi)
        pair_counts.pop(best, None)
        if merged not in known:
            known.add(merged)
            merges.append(merged)

    pieces = merges + alphabet
    scores = [-float(i) for i in range(len(pieces))]
    return pieces, scores


class SPMTokenizer:
    def __init__(self, pieces, scores):
        self.tokens = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)] + list(pieces)
        self.scores = [0.0] * FIRST_PIECE + list(scores)
        self.types = [TYPE_UNKNOWN, TYPE_CONTROL, TYPE_CONTROL] + [TYPE_BYTE] * 256 + [TYPE_NORMAL] * len(pieces)
        # llama.cpp looks every token's text up, byte and control tokens included.
        self.index = {t: i for i, t in enumerate(self.tokens)}
        self.cache = {}

    def __len__(self):
        return len(self.tokens)

    def _merge(self, text):
        """llama.cpp's SPM merge loop on an escaped text: list of token ids."""
        syms = list(text)
        n = len(syms)
        prev = list(range(-1, n - 1))
        nxt = list(range(1, n + 1))
        nxt[-1] = -1
        heap = []

        def propose(left, right):
            if left < 0 or right < 0:
                return
            piece = syms[left] + syms[right]
            tid = self.index.get(piece)
            if tid is not None:
                # heapq pops the smallest: best score first, then leftmost.
                heapq.heappush(heap, (-self.scores[tid], left, right, len(piece)))

        for i in range(1, n):
            propose(i - 1, i)
        while heap:
            _, left, right, size = heapq.heappop(heap)
            if not syms[left] or not syms[right] or len(syms[left]) + len(syms[right]) != size:
                continue
            syms[left] += syms[right]
            syms[right] = ""
            nxt[left] = nxt[right]
            if nxt[right] >= 0:
                prev[nxt[right]] = left
            propose(prev[left], left)
            propose(left, nxt[left])

        ids = []
        i = 0
        while i != -1:
            s = syms[i]
            tid = self.index.get(s)
            if tid is not None:
                ids.append(tid)
            else:
                ids.extend(BYTE_BASE + b for b in s.encode("utf-8"))
            i = nxt[i]
        return ids

    def encode_segment(self, escaped):
        ids = []
        for chunk in CHUNK_RE.findall(escaped):  # the chunks tile the text
            got = self.cache.get(chunk)
            if got is None:
                got = self.cache[chunk] = self._merge(chunk)
            ids.extend(got)
        return ids

    def encode_segment_slow(self, escaped):
        return self._merge(escaped) if escaped else []

    def encode(self, text, add_bos=True, parse_special=True, slow=False):
        ids = [BOS] if add_bos else []
        prev_special = True
        for special, seg in segments(text, parse_special):
            if special:
                ids.append(SPECIAL_IDS[seg])
                prev_special = True
                continue
            escaped = (SPACE if prev_special else "") + escape(seg)
            ids.extend(self.encode_segment_slow(escaped) if slow else self.encode_segment(escaped))
            prev_special = False
        return ids

    def decode(self, ids):
        out = bytearray()
        for i in ids:
            t = self.types[i]
            if t == TYPE_BYTE:
                out.append(i - BYTE_BASE)
            elif t == TYPE_NORMAL:
                out += self.tokens[i].replace(SPACE, " ").encode("utf-8")
        return out.decode("utf-8", errors="replace")

