"""Prometheus metrics, written in the text exposition format (version 0.0.4) without a client library.

The proxy runs on one event loop, so plain integers and floats need no lock. Label sets are small and closed
(route, status class, verdict kind, retry reason), so the number of series is bounded. ``render()`` is
O(number of series + buckets).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

__all__ = ["LATENCY_BUCKETS", "Metrics"]

LATENCY_BUCKETS: tuple[float, ...] = (
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
)

Labels = tuple[tuple[str, str], ...]


def _fmt_labels(labels: Labels) -> str:
    if not labels:
        return ""
    inner = ",".join(
        f'{k}="{v.replace(chr(92), chr(92) * 2).replace(chr(34), chr(92) + chr(34)).replace(chr(10), "")}"'
        for k, v in labels
    )
    return "{" + inner + "}"


class _Histogram:
    __slots__ = ("buckets", "count", "counts", "sum")

    def __init__(self, buckets: Iterable[float]) -> None:
        self.buckets = tuple(buckets)
        self.counts = [0] * len(self.buckets)
        self.count = 0
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.count += 1
        self.sum += value
        for i, bound in enumerate(self.buckets):
            if value <= bound:
                self.counts[i] += 1
                break


class Metrics:
    """Counters, one gauge and one histogram for the proxy; ``render()`` gives the /metrics body."""

    def __init__(self) -> None:
        self.requests: defaultdict[Labels, int] = defaultdict(int)
        self.verdicts: defaultdict[Labels, int] = defaultdict(int)
        self.retries: defaultdict[Labels, int] = defaultdict(int)
        self.upstream_errors: defaultdict[Labels, int] = defaultdict(int)
        self.repairs: defaultdict[Labels, int] = defaultdict(int)
        self.constraints: defaultdict[Labels, int] = defaultdict(int)
        self.first_attempts: defaultdict[Labels, int] = defaultdict(int)
        self.protocols: defaultdict[Labels, int] = defaultdict(int)
        self.client_disconnects = 0
        self.streams_open = 0
        self.upstream_latency = _Histogram(LATENCY_BUCKETS)

    def request(self, route: str, status: int) -> None:
        self.requests[(("route", route), ("code", str(status)))] += 1

    def verdict(self, kind: str) -> None:
        self.verdicts[(("kind", kind),)] += 1

    def retry(self, reason: str) -> None:
        self.retries[(("reason", reason),)] += 1

    def repair(self, kind: str) -> None:
        """A generation repaired instead of re-asked: ``call_in_content`` (a call written as text) or
        ``fabricated`` (text made up beside the calls, cut)."""
        self.repairs[(("kind", kind),)] += 1

    def first_attempt(self, constraint: str, valid: bool) -> None:
        """A request's first upstream answer, valid (usable as it came, repairs included) or not, by the
        engine constraint it was sent with (``structural_tag``, ``none``, ``refused``)."""
        self.first_attempts[(("constraint", constraint), ("valid", "true" if valid else "false"))] += 1

    def protocol(self, route: str, upstream: str) -> None:
        """A ``/v1/messages`` or ``/v1/responses`` request, served ``native`` (the upstream's own endpoint)
        or ``translated`` (over its chat completions)."""
        self.protocols[(("route", route), ("upstream", upstream))] += 1

    def upstream_error(self, kind: str) -> None:
        self.upstream_errors[(("kind", kind),)] += 1

    def render(self) -> str:
        out: list[str] = []

        def counter(name: str, help_: str, series: dict[Labels, int]) -> None:
            out.append(f"# HELP {name} {help_}")
            out.append(f"# TYPE {name} counter")
            for labels, value in sorted(series.items()):
                out.append(f"{name}{_fmt_labels(labels)} {value}")

        counter("toolguard_requests_total", "Requests answered, by route and HTTP status.", self.requests)
        counter("toolguard_verdicts_total", "Guard verdicts on upstream answers, by kind.", self.verdicts)
        counter("toolguard_retries_total", "Upstream requests repeated, by reason.", self.retries)
        counter("toolguard_upstream_errors_total", "Upstream failures, by kind.", self.upstream_errors)
        counter("toolguard_repairs_total", "Answers repaired instead of re-asked, by kind.", self.repairs)
        counter(
            "toolguard_first_attempts_total",
            "First upstream answers of requests with tools, by engine constraint and validity.",
            self.first_attempts,
        )
        counter(
            "toolguard_protocol_requests_total",
            "Messages and Responses requests, by route and how they reached the upstream.",
            self.protocols,
        )
        counter(
            "toolguard_client_disconnects_total",
            "Clients that left before their answer ended.",
            {(): self.client_disconnects},
        )
        out.append("# HELP toolguard_streams_open Streamed responses in progress.")
        out.append("# TYPE toolguard_streams_open gauge")
        out.append(f"toolguard_streams_open {self.streams_open}")
        h = self.upstream_latency
        name = "toolguard_upstream_latency_seconds"
        out.append(f"# HELP {name} Seconds from sending a request upstream to its response headers.")
        out.append(f"# TYPE {name} histogram")
        cumulative = 0
        for bound, count in zip(h.buckets, h.counts, strict=True):
            cumulative += count
            out.append(f'{name}_bucket{{le="{bound}"}} {cumulative}')
        out.append(f'{name}_bucket{{le="+Inf"}} {h.count}')
        out.append(f"{name}_sum {h.sum}")
        out.append(f"{name}_count {h.count}")
        return "\n".join(out) + "\n"
