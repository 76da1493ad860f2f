"""RunawayStoppingCriteria: stop a transformers ``generate()`` when a sequence falls into a repetition loop.

One ``RunawayDetector`` per sequence of the batch. Each call decodes only the tokens added since the previous
call, incrementally (as vLLM's detokenizer does): the text of ``ids[prefix:read]`` and of ``ids[prefix:]`` are
decoded and the difference is the new text, so tokenizers that drop a leading space when a token is decoded
alone (SentencePiece) and byte-level tokens that hold part of a UTF-8 character both come out right. A token
whose text is still incomplete (the decoded text ends with U+FFFD) is pushed as ``""`` with its id, and its
characters arrive with the token that completes them. Special tokens (eos, pad) are not pushed.

The criterion returns a bool tensor of shape ``(batch,)``: True for the sequences with a runaway, which
``generate()`` then finishes while the others continue. ``runaways[i]`` is the loop found in sequence ``i``,
``finish_reasons[i]`` is ``"repetition"`` for them, and ``keep_tokens(i)`` tells how many generated tokens
cover the text before the loop plus one copy (trim there).

Cost per step: two decodes of a few tokens per sequence plus ``RunawayDetector.push``; memory per sequence:
the detector's window plus one int per generated token (for ``keep_tokens``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from transformers import StoppingCriteria

from .._exceptions import UsageError
from .._runaway import FINISH_REASON_REPETITION, Runaway, RunawayDetector

__all__ = ["RunawayStoppingCriteria"]

# Tokens kept as decoding context before the unread ones (enough for a UTF-8 character split in bytes).
_PREFIX_TOKENS = 6
# Tokens an incomplete character may span before its replacement characters are accepted as text.
_MAX_PENDING = 8
_REPLACEMENT = "\ufffd"


class _Sequence:
    """Incremental detokenizer + detector for one sequence of the batch."""

    __slots__ = ("detector", "ends", "ids", "prefix", "read")

    def __init__(self, detector: RunawayDetector) -> None:
        self.detector = detector
        self.ids: list[int] = []
        self.prefix = 0
        self.read = 0
        self.ends: list[int] = []  # characters pushed after each generated token

    def step(self, tokenizer: Any, token_id: int, special: frozenset[int], push_id: bool) -> Runaway | None:
        if token_id in special:
            self.ends.append(self.detector.consumed)
            return self.detector.runaway
        ids = self.ids
        ids.append(token_id)
        before = tokenizer.decode(ids[self.prefix : self.read], skip_special_tokens=True)
        after = tokenizer.decode(ids[self.prefix :], skip_special_tokens=True)
        complete = not after.endswith(_REPLACEMENT) or len(ids) - self.read >= _MAX_PENDING
        if complete and len(after) >= len(before):
            text = after[len(before) :]
            self.prefix = max(self.read, len(ids) - _PREFIX_TOKENS)
            self.read = len(ids)
            if self.prefix > 4 * _PREFIX_TOKENS:  # keep the id list short
                del ids[: self.prefix]
                self.read -= self.prefix
                self.prefix = 0
        else:
            text = ""
        found = self.detector.push(text, token_id if push_id else None)
        self.ends.append(self.detector.consumed)
        return found


class RunawayStoppingCriteria(StoppingCriteria):
    """A transformers ``StoppingCriteria`` that stops each sequence of a batch at its first runaway.

    ``RunawayStoppingCriteria(tokenizer, detector_factory=RunawayDetector, prompt_length=None)``:

    - ``tokenizer``: the model's tokenizer (anything with ``decode(ids, skip_special_tokens=...)``).
    - ``detector_factory``: builds one detector per sequence (e.g. ``lambda: RunawayDetector(cap=4096)``).
    - ``prompt_length``: tokens of the prompt in ``input_ids`` (left padding included). When None it is
      taken from the first call as ``input_ids.shape[1] - 1`` (one new token per step, as plain decoding).
    - ``use_token_ids``: pass token ids to the detectors (enables ``token_run``).

    Reusing the object for another ``generate()`` call needs ``reset()`` first (a shorter ``input_ids`` or a
    different batch size also resets it). Pass it as ``model.generate(..., stopping_criteria=
    StoppingCriteriaList([criteria]))``.
    """

    def __init__(
        self,
        tokenizer: Any,
        *,
        detector_factory: Callable[[], RunawayDetector] = RunawayDetector,
        prompt_length: int | None = None,
        use_token_ids: bool = True,
    ) -> None:
        self.tokenizer = tokenizer
        self.detector_factory = detector_factory
        self.use_token_ids = use_token_ids
        self._prompt_length = prompt_length
        special = getattr(tokenizer, "all_special_ids", None) or []
        self._special = frozenset(int(i) for i in special)
        self.reset()

    def reset(self) -> None:
        """Forget the sequences: the next call starts a new generation."""
        self._seen = -1
        self._batch: list[_Sequence] = []
        self._done: list[bool] = []

    @property
    def runaways(self) -> list[Runaway | None]:
        """The loop found in each sequence of the batch, or None."""
        return [seq.detector.runaway for seq in self._batch]

    @property
    def finish_reasons(self) -> list[str | None]:
        """``"repetition"`` for the sequences this criterion stopped, None for the others."""
        return [FINISH_REASON_REPETITION if r is not None else None for r in self.runaways]

    @property
    def detectors(self) -> Sequence[RunawayDetector]:
        return [seq.detector for seq in self._batch]

    def keep_tokens(self, index: int) -> int | None:
        """Generated tokens of sequence ``index`` that cover the text before its loop plus one copy of the
        unit (trim the output there), or None when it has no runaway."""
        seq = self._batch[index]
        runaway = seq.detector.runaway
        if runaway is None:
            return None
        keep = runaway.offset + runaway.period
        for n, end in enumerate(seq.ends, start=1):
            if end >= keep:
                return n
        return len(seq.ends)

    def __call__(self, input_ids: torch.LongTensor, scores: Any = None, **kwargs: Any) -> torch.BoolTensor:
        batch, length = input_ids.shape
        if self._seen < 0 or batch != len(self._batch) or length < self._seen:
            self._start(batch, length)
        if length > self._seen:
            new = input_ids[:, self._seen : length].tolist()
            self._seen = length
            tokenizer = self.tokenizer
            special = self._special
            use_ids = self.use_token_ids
            for i, row in enumerate(new):
                if self._done[i]:
                    continue
                seq = self._batch[i]
                for token_id in row:
                    found = seq.step(tokenizer, int(token_id), special, use_ids)
                    if found is not None:
                        self._done[i] = True
                        break
        return torch.tensor(self._done, dtype=torch.bool, device=input_ids.device)  # type: ignore[return-value]

    def _start(self, batch: int, length: int) -> None:
        prompt = self._prompt_length if self._prompt_length is not None else length - 1
        if not 0 <= prompt <= length:
            raise UsageError(f"prompt_length={prompt} does not fit input_ids of {length} tokens")
        self._seen = prompt
        self._batch = [_Sequence(self.detector_factory()) for _ in range(batch)]
        self._done = [False] * batch
