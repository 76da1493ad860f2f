"""What a front door does after a runaway: finish reason, retry with changed sampling, or give up.

Every front door (SDK wrapper, proxy, local generator) stops a looping generation and reports the finish
reason ``"repetition"`` (distinct from ``stop`` and ``length``). It may retry, but never with identical
sampling: ``RunawayPolicy.retry_params`` lowers the temperature and draws a new seed for each attempt, within
a bounded number of retries. When the loop is already in the prompt (the model is copying it, see
``loop_in_prompt``), a retry would loop again: ``should_retry`` says no.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from .._exceptions import ConfigError, UsageError
from ._detector import Runaway

__all__ = [
    "FINISH_REASON_REPETITION",
    "MAX_RUNAWAY_RETRIES",
    "RunawayPolicy",
    "loop_in_prompt",
]

FINISH_REASON_REPETITION: Final = "repetition"
"""The finish reason of a generation stopped by the runaway detector."""

MAX_RUNAWAY_RETRIES: Final = 5
"""Upper bound on ``RunawayPolicy.max_retries``: a loop that survives five changed retries is not random."""

_SEED_MULTIPLIER: Final = 1_000_003
_SEED_STRIDE: Final = 0x9E3779B1
_SEED_MODULUS: Final = 2**31 - 1
# Characters of the loop the prompt must contain for the loop to count as copied from it.
_PROMPT_MIN_CHARS: Final = 32


@dataclass(frozen=True, slots=True)
class RunawayPolicy:
    """How to retry after a runaway.

    Attempt ``n`` (1 for the first retry) samples at ``max(temperature * temperature_factor**n,
    temperature_floor)``, where ``temperature`` is the request's own (``default_temperature`` when it has
    none); a greedy request (temperature 0) retries at ``temperature_floor``. With ``reseed`` each attempt
    gets a new deterministic seed derived from the request's seed (0 when none) and ``n``, so no retry
    repeats the previous request's sampling.
    """

    max_retries: int = 2
    temperature_factor: float = 0.7
    temperature_floor: float = 0.2
    default_temperature: float = 1.0
    reseed: bool = True

    def __post_init__(self) -> None:
        if not 0 <= self.max_retries <= MAX_RUNAWAY_RETRIES:
            raise ConfigError(
                f"max_retries must be between 0 and {MAX_RUNAWAY_RETRIES}, got {self.max_retries}"
            )
        if not 0 < self.temperature_factor <= 1:
            raise ConfigError(f"temperature_factor must be in (0, 1], got {self.temperature_factor}")
        if self.temperature_floor <= 0:
            raise ConfigError("temperature_floor must be positive: a greedy retry would loop the same way")
        if self.default_temperature < 0:
            raise ConfigError("default_temperature must not be negative")
        if not self.reseed and self.temperature_factor == 1:
            raise ConfigError("a retry must change something: set reseed=True or temperature_factor < 1")

    def retry_temperature(self, temperature: float | None, attempt: int) -> float:
        """The temperature of retry ``attempt`` (1-based) for a request sampled at ``temperature``."""
        _check_attempt(attempt)
        base = self.default_temperature if temperature is None else float(temperature)
        if base <= 0:
            return self.temperature_floor
        return max(base * self.temperature_factor**attempt, self.temperature_floor)

    def retry_seed(self, seed: int | None, attempt: int) -> int:
        """A new seed for retry ``attempt``, derived deterministically from the request's seed."""
        _check_attempt(attempt)
        return ((seed or 0) * _SEED_MULTIPLIER + attempt * _SEED_STRIDE) % _SEED_MODULUS

    def retry_params(self, params: Mapping[str, Any], attempt: int) -> dict[str, Any]:
        """A copy of the sampling ``params`` (OpenAI / transformers names) changed for retry ``attempt``.

        Sets ``temperature`` (and ``do_sample=True`` when ``params`` has ``do_sample``, the transformers name)
        and, with ``reseed``, ``seed``. Everything else is kept. Raises ``UsageError`` past ``max_retries``.
        """
        if attempt > self.max_retries:
            raise UsageError(f"retry {attempt} exceeds max_retries={self.max_retries}; check should_retry()")
        out = dict(params)
        out["temperature"] = self.retry_temperature(params.get("temperature"), attempt)
        if "do_sample" in out:
            out["do_sample"] = True
        if self.reseed:
            out["seed"] = self.retry_seed(params.get("seed"), attempt)
        return out

    def should_retry(
        self, runaway: Runaway, attempt: int, *, prompt: str | Iterable[str] | None = None
    ) -> bool:
        """Whether retry ``attempt`` (1-based) may run: attempts left, and the loop not copied from
        ``prompt``."""
        if attempt > self.max_retries:
            return False
        return prompt is None or not loop_in_prompt(runaway, prompt)


def loop_in_prompt(runaway: Runaway, prompt: str | Iterable[str]) -> bool:
    """Whether the prompt already holds the loop: ``min(runaway.length, max(2 * period, 32))`` characters of
    the repeated text, in the phase the loop started with. Then the model is copying, and a retry would loop
    again. ``prompt`` is the prompt text or the texts of its messages. O(len(prompt))."""
    texts = [prompt] if isinstance(prompt, str) else list(prompt)
    unit = runaway.unit
    if not unit:
        return False
    p = len(unit)
    need = min(max(runaway.length, p), max(2 * p, _PROMPT_MIN_CHARS))
    stretch = (unit * (need // p + 1))[:need]
    return any(stretch in text for text in texts)


def _check_attempt(attempt: int) -> None:
    if attempt < 1:
        raise UsageError(f"attempts are numbered from 1 (the first retry), got {attempt}")
