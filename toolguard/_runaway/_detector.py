"""RunawayDetector: find a repetition loop in a stream of text pieces, early, without false alarms.

Theory of operation
-------------------
``push(text, token_id)`` appends the piece to a list and returns; the work happens at *checkpoints*, absolute
text positions spaced 19 to 29 characters apart in a fixed cycle. Checkpoints depend only on the text, never
on how it was cut into pieces, so the text detectors give the same answer for every chunking (``detected_at``
is the checkpoint where the loop was recognised); only ``token_run`` depends on the tokens. The irregular
spacing makes successive checkpoints see different rotations of a loop's unit.

At each checkpoint ``b`` (the text up to ``b`` is in a tail buffer of ``window`` to ``2*window`` characters):

1. **whitespace**: the length and newline count of the whitespace-only tail, updated from the segment since
   the previous checkpoint.
2. **periodic** (reported as ``char_run`` for period 1 and ``line_repeat`` for units of whole lines): one
   candidate period ``p`` is tracked with the start of its periodic extent, the tail where ``s[j] == s[j-p]``.
   If the new segment continues it (one slice comparison) the extent grows, and when it reaches
   ``need(unit)`` (``_config.need_chars``: few copies for content, more for benign classes, never past
   ``cap``) the loop fires. Without a candidate the last ``probe`` characters are searched backwards
   (``str.rfind``) within ``max_period``; a hit at shift ``p`` becomes the candidate if the tail holds two
   full copies of period ``p``. At most ``_TRIES`` hits are tried; a hit inside a short-period run
   (indentation) jumps over the whole run, so a unit with inner repetition still yields its true period at
   some checkpoint.
   Every ``block_every`` checkpoints a longer probe is searched up to ``max_block_period`` (paragraphs). The
   start of an accepted extent is found by doubling and bisection over slice comparisons.
3. **ngram** (off by default): the last ``ngram_length`` characters occurring ``ngram_copies`` times in the
   last ``ngram_window`` characters (``str.count``): loops that vary slightly.

``token_run`` runs in ``push`` itself: identical consecutive token ids; a run is classified (with the text
before it as context) when it reaches ``min(token_run, token_run_short)`` tokens: a content token fires at
``token_run``, a short word or punctuation (``SHORT_TOKEN`` characters or fewer, a space before it or no
letter in it: `` la``, `` S``, ``?,``) at ``token_run_short``, and benign tokens get the text thresholds.

Cost: O(1) Python operations per piece plus, per checkpoint, O(max_period + segment) work inside C string
routines (O(max_block_period) every ``block_every`` checkpoints); finding a candidate's start is O(extent),
once per candidate. Memory: O(window).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

from .._exceptions import ConfigError
from ._config import SHORT_TOKEN, RunawayConfig, UnitClass, classify_unit, need_chars

__all__ = ["Runaway", "RunawayDetector", "RunawayKind"]

RunawayKind = Literal["token_run", "char_run", "periodic", "line_repeat", "whitespace", "ngram"]

# Checkpoint spacing cycle (characters), average 24: the steps vary the rotation each checkpoint sees.
_SPACING = (19, 23, 29, 21, 27, 22, 26, 25)
# How many probe hits one checkpoint examines before waiting for the next.
_TRIES = 4
# Characters before a loop that ``classify_unit`` reads to recognise base64 and hex.
_CONTEXT = 64
_WHITESPACE = frozenset(" \t\r\n\x0b\x0c")
_NEVER = 1 << 62


@dataclass(frozen=True, slots=True)
class Runaway:
    """A repetition loop. ``text[:offset + period]`` keeps the text before the loop plus one copy.

    - ``kind``: which detector fired.
    - ``unit``: one copy of the repeated text as it first appeared (``text[offset:offset + period]``); for
      ``whitespace`` the first whitespace character, for ``ngram`` the recurring n-gram.
    - ``period``: characters per copy (the n-gram's mean spacing for ``ngram``).
    - ``copies``: whole copies seen when it fired (``token_run``: identical tokens).
    - ``offset``: index in the whole pushed text where the loop began.
    - ``length``: characters of repetition seen when it fired, first copy included.
    - ``detected_at``: characters pushed when it was recognised (a checkpoint, or the token's end).
    - ``unit_class``: what the unit looked like, which chose the threshold (``content``, ``rule``, ...).
    """

    kind: RunawayKind
    unit: str
    period: int
    copies: int
    offset: int
    length: int
    detected_at: int
    unit_class: UnitClass = "content"


class RunawayDetector:
    """Streaming repetition detector; see the module docstring for how it works.

    ``RunawayDetector(config=RunawayConfig(...))`` or ``RunawayDetector(cap=4096, ...)`` (keyword overrides of
    the default config; an unknown name raises ``ConfigError``). Sans-IO: no clock, no I/O, no threads.
    Once it fires, ``push`` keeps returning the same ``Runaway`` until ``reset()``.
    """

    __slots__ = (
        "_buf",
        "_buf_base",
        "_cand_class",
        "_cand_need",
        "_cand_p",
        "_cand_start",
        "_checks",
        "_config",
        "_fired",
        "_next_check",
        "_pending",
        "_prev_check",
        "_spacing_i",
        "_tok_id",
        "_tok_need",
        "_tok_need_start",
        "_tok_run",
        "_tok_start",
        "_tok_text",
        "_token_run",
        "_total",
        "_ws_len",
        "_ws_nl",
    )

    def __init__(self, *, config: RunawayConfig | None = None, **overrides: float | bool) -> None:
        base = config if config is not None else RunawayConfig()
        if overrides:
            names = {f.name for f in dataclasses.fields(RunawayConfig)}
            unknown = sorted(set(overrides) - names)
            if unknown:
                raise ConfigError(f"unknown RunawayConfig option(s): {', '.join(unknown)}")
            base = dataclasses.replace(base, **overrides)  # type: ignore[arg-type]
        self._config = base
        self.reset()

    @property
    def config(self) -> RunawayConfig:
        return self._config

    @property
    def runaway(self) -> Runaway | None:
        """The loop found so far (sticky), or None."""
        return self._fired

    @property
    def consumed(self) -> int:
        """Characters pushed since construction or the last ``reset()``."""
        return self._total

    def reset(self) -> None:
        """Forget everything: a new generation starts."""
        self._fired: Runaway | None = None
        self._buf = ""
        self._buf_base = 0
        self._pending: list[str] = []
        self._total = 0
        self._prev_check = 0
        self._checks = 0
        self._spacing_i = 0
        self._next_check = _SPACING[0]
        self._ws_len = 0
        self._ws_nl = 0
        self._cand_p = 0
        self._cand_start = 0
        self._cand_need = 0
        self._cand_class: UnitClass = "content"
        self._tok_id: int | None = None
        self._tok_text = ""
        self._tok_run = 0
        self._tok_need = 0
        self._tok_need_start = -1
        self._tok_start = 0
        self._token_run = min(self._config.token_run, self._config.token_run_short)

    def push(self, text: str, token_id: int | None = None) -> Runaway | None:
        """Consume one piece of generated text (and its token id, when known); return the loop found, if any.

        Amortised O(1) per piece of bounded size. An empty piece (a token that decodes to nothing yet, e.g.
        half of a UTF-8 character) is allowed and still counts for ``token_run``.
        """
        if self._fired is not None:
            return self._fired
        if token_id is not None:
            if token_id == self._tok_id:
                run = self._tok_run = self._tok_run + 1
                if run >= self._token_run and self._token_run_fires(text):
                    return self._fire_tokens(text)
            else:
                self._tok_id = token_id
                self._tok_run = 1
                self._tok_start = self._total
        self._pending.append(text)
        total = self._total = self._total + len(text)
        if total < self._next_check:
            return None
        return self._advance()

    # -- token runs ----------------------------------------------------------------------------------------

    def _token_run_fires(self, text: str) -> bool:
        """Called once a run reaches ``token_run`` tokens: classify the token with the text before the run
        (once per run) and, for a benign or one-character token, require as many tokens as the text
        threshold needs characters."""
        if self._tok_need_start == self._tok_start:
            return self._tok_run >= self._tok_need  # classified before
        cfg = self._config
        self._tok_text = text
        self._tok_need_start = self._tok_start
        unit = _root(text)
        if not unit:
            self._tok_need = _NEVER  # undecodable alone (half a character): the text detectors see it
            return False
        run_chars = self._total - self._tok_start
        tail = self._buf[-(_CONTEXT + run_chars) :] + "".join(self._pending)
        context = tail[max(len(tail) - run_chars - _CONTEXT, 0) : max(len(tail) - run_chars, 0)]
        cls = classify_unit(unit, context)
        if cls == "content" and len(unit) > 1:
            self._tok_need = cfg.token_run_short if _short_word(unit) else cfg.token_run
        else:
            need = need_chars(cfg, unit, cls)
            self._tok_need = max(cfg.token_run + 1, -(-need // len(text)))
        return self._tok_run >= self._tok_need

    def _fire_tokens(self, text: str) -> Runaway:
        self._total += len(text)
        unit = self._tok_text
        runaway = Runaway(
            kind="token_run",
            unit=unit,
            period=len(unit),
            copies=self._tok_run,
            offset=self._tok_start,
            length=len(unit) * self._tok_run,
            detected_at=self._total,
            unit_class=classify_unit(_root(unit)),
        )
        self._fired = runaway
        return runaway

    # -- checkpoints ---------------------------------------------------------------------------------------

    def _advance(self) -> Runaway | None:
        buf = self._buf
        self._buf = ""
        pending = self._pending
        buf += "".join(pending)  # in place: ``buf`` holds the only reference
        pending.clear()
        total = self._total
        found: Runaway | None = None
        while found is None and self._next_check <= total:
            self._checks += 1
            found = self._check(buf, self._next_check)
            self._prev_check = self._next_check
            i = self._spacing_i = (self._spacing_i + 1) % len(_SPACING)
            self._next_check += _SPACING[i]
        window = self._config.window
        if len(buf) > 2 * window:
            drop = len(buf) - window
            buf = buf[drop:]
            self._buf_base += drop
        self._buf = buf
        if found is not None:
            self._fired = found
        return found

    def _check(self, s: str, b: int) -> Runaway | None:
        cfg = self._config
        base = self._buf_base
        bb = b - base
        aa = self._prev_check - base
        if aa < 0:
            aa = 0
        # 1. whitespace-only tail
        if s[bb - 1] in _WHITESPACE:
            seg = s[aa:bb]
            if seg.isspace():
                self._ws_len += len(seg)
                self._ws_nl += seg.count("\n")
            else:
                kept = len(seg.rstrip())
                self._ws_len = len(seg) - kept
                self._ws_nl = seg.count("\n", kept)
            if self._ws_len >= cfg.whitespace_chars or self._ws_nl >= cfg.whitespace_newlines:
                return self._whitespace(s, b)
        else:
            self._ws_len = self._ws_nl = 0
        # 2. periodic tail: continue the candidate, or look for one
        p = self._cand_p
        if p:
            if s[aa:bb] == s[aa - p : bb - p]:
                if b - self._cand_start >= self._cand_need:
                    return self._periodic(s, b)
                return self._ngram(s, bb, b) if cfg.ngram else None
            self._cand_p = 0
        found = self._search(s, bb, b, cfg.probe, cfg.max_period, 1) or (
            self._checks % cfg.block_every == 0
            and self._search(s, bb, b, cfg.block_probe, cfg.max_block_period, cfg.max_period + 1)
        )
        if found and b - self._cand_start >= self._cand_need:
            return self._periodic(s, b)
        # 3. n-gram recurrence (optional)
        return self._ngram(s, bb, b) if cfg.ngram else None

    def _search(self, s: str, bb: int, b: int, m: int, max_p: int, min_p: int) -> bool:
        """Look for a period in ``[min_p, max_p]`` with two full copies at the tail; adopt the first found."""
        if bb <= m + min_p:
            return False
        probe = s[bb - m : bb]
        lo = bb - m - max_p
        if lo < 0:
            lo = 0
        hi = bb - m - min_p  # the last start a hit may have
        for _ in range(_TRIES):
            i = s.rfind(probe, lo, hi + m)
            if i < 0:
                return False
            p = bb - m - i
            if p > m:
                if bb < 2 * p or s[bb - 2 * p : bb - p] != s[bb - p : bb]:
                    hi = i - 1
                    continue
                known = 2 * p
            else:
                known = m + p
            extent = _extent(s, bb, p, known)
            if s[bb - p : bb].isspace():
                # Whitespace has its own detector; jump over this run to look for a longer period.
                hi = (bb - extent - 1 + p - m) if p < m else i - 1
                continue
            first = bb - extent
            unit = s[first : first + p]
            cls = classify_unit(unit, s[max(first - _CONTEXT, 0) : first])
            self._cand_p = p
            self._cand_start = b - extent
            self._cand_class = cls
            self._cand_need = need_chars(self._config, unit, cls)
            return True
        return False

    def _periodic(self, s: str, b: int) -> Runaway:
        p = self._cand_p
        start = self._cand_start
        first = start - self._buf_base
        unit = s[first : first + p]
        cls = self._cand_class
        kind: RunawayKind
        if p == 1:
            kind = "char_run"
        elif cls == "lines":
            kind = "line_repeat"
        else:
            kind = "periodic"
        return Runaway(
            kind=kind,
            unit=unit,
            period=p,
            copies=(b - start) // p,
            offset=start,
            length=b - start,
            detected_at=b,
            unit_class=cls,
        )

    def _whitespace(self, s: str, b: int) -> Runaway:
        start = b - self._ws_len
        return Runaway(
            kind="whitespace",
            unit=s[start - self._buf_base],
            period=1,
            copies=self._ws_len,
            offset=start,
            length=self._ws_len,
            detected_at=b,
            unit_class="whitespace",
        )

    def _ngram(self, s: str, bb: int, b: int) -> Runaway | None:
        cfg = self._config
        n = cfg.ngram_length
        if bb < n:
            return None
        gram = s[bb - n : bb]
        if gram.isspace():
            return None
        lo = max(bb - cfg.ngram_window, 0)
        copies = s.count(gram, lo, bb)
        if copies < cfg.ngram_copies:
            return None
        cls = classify_unit(gram)
        if cls not in ("content", "lines"):
            return None  # benign structure recurs legitimately (tables, rules, equal items)
        first = s.find(gram, lo, bb)
        return Runaway(
            kind="ngram",
            unit=gram,
            period=max((bb - n - first) // (copies - 1), 1),
            copies=copies,
            offset=first + self._buf_base,
            length=bb - first,
            detected_at=b,
            unit_class=cls,
        )


def _extent(s: str, end: int, p: int, known: int) -> int:
    """Length of the longest suffix of ``s[:end]`` with period ``p``, given that ``known`` characters have it.

    Doubling then bisection over slice comparisons: O(extent) character comparisons in C.
    """
    length = known
    step = max(known, 32)
    while length < end:
        longer = min(end, length + step)
        lo_j = end - longer
        if s[lo_j : end - length] == s[lo_j + p : end - length + p]:
            length = longer
            step *= 2
            continue
        good, bad = length, longer
        while bad - good > 1:
            mid = (good + bad) // 2
            if s[end - mid : end - good] == s[end - mid + p : end - good + p]:
                good = mid
            else:
                bad = mid
        return good
    return length


def _short_word(unit: str) -> bool:
    """A short word (`` la``, `` nil``, `` S``) or punctuation (``?,``): repeats legitimately. A short subword
    without a space before it (``ck``, ``ing``) does not: ``ckckck`` is no refrain."""
    if len(unit.strip()) > SHORT_TOKEN:
        return False
    return unit[:1].isspace() or not any(c.isalnum() for c in unit)


def _root(text: str) -> str:
    """The smallest unit whose repetition spells ``text`` (``abab`` -> ``ab``); O(len(text))."""
    n = len(text)
    if n <= 1:
        return text
    i = (text + text).find(text, 1)
    return text[:i] if n % i == 0 else text
