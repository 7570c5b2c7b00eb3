"""Prometheus metrics for one HTTP app (a single server or the bundle), in their own registry.

Every label comes from a bounded set: the server names of the app, the tools each server
registered ("unknown" for any other name a caller sends), the MCP methods of the protocol
("other" for the rest), and fixed words for outcomes, refusal reasons and limits. Nothing a
caller types becomes a label value, so a caller cannot grow the metrics.

    mcp_requests_total{server,method}                        every request answered
    mcp_tool_calls_total{server,tool,outcome}                ok | tool_error | invalid_params |
                                                             internal_error | error | cancelled | task
    mcp_tool_call_duration_seconds{server,tool}              histogram
    mcp_tool_calls_in_flight{server}
    mcp_sessions{server}, mcp_event_store_bytes{server}      read when scraped
    mcp_watched_paths{server}, mcp_os_watches{server}        read when scraped
    mcp_auth_failures_total{reason}                          missing_token | invalid_token |
                                                             insufficient_scope | forbidden | keys_unavailable
    mcp_rate_limit_refusals_total{server,limit}              rate | in_flight
    process_*, python_gc_*, python_info                      the client library's collectors
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

__all__ = ["CONTENT_TYPE", "KNOWN_METHODS", "Metrics"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

#: Methods counted by name; any other is "other".
KNOWN_METHODS = frozenset(
    {
        "initialize",
        "ping",
        "tools/list",
        "tools/call",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "resources/subscribe",
        "resources/unsubscribe",
        "prompts/list",
        "prompts/get",
        "completion/complete",
        "logging/setLevel",
        "subscriptions/listen",
        "server/discover",
        "tasks/get",
        "tasks/result",
        "tasks/cancel",
        "tasks/list",
    }
)
AUTH_REASONS = frozenset(
    {"missing_token", "invalid_token", "insufficient_scope", "forbidden", "keys_unavailable"}
)
#: Seconds: from a cached read to a long query.
DURATION_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)

#: server name -> a number read at scrape time.
Reading = Callable[[], Iterable[tuple[str, float]]]


class _Readings(Collector):
    """Gauges computed when scraped (sessions, event-store bytes): nothing to keep up to date."""

    def __init__(self) -> None:
        self.readings: list[tuple[str, str, Reading]] = []

    def collect(self) -> Iterator[Metric]:
        for name, documentation, read in self.readings:
            family = GaugeMetricFamily(name, documentation, labels=["server"])
            for server, value in read():
                family.add_metric([server], value)
            yield family


class Metrics:
    def __init__(self) -> None:
        self.registry = registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "mcp_requests",
            "MCP requests answered, by server and method.",
            ["server", "method"],
            registry=registry,
        )
        self.tool_calls = Counter(
            "mcp_tool_calls",
            "Tool calls answered, by server, tool and outcome.",
            ["server", "tool", "outcome"],
            registry=registry,
        )
        self.tool_seconds = Histogram(
            "mcp_tool_call_duration_seconds",
            "Time from a tool call's arrival at the server to its answer.",
            ["server", "tool"],
            buckets=DURATION_BUCKETS,
            registry=registry,
        )
        self.in_flight = Gauge(
            "mcp_tool_calls_in_flight", "Tool calls being answered now.", ["server"], registry=registry
        )
        self.auth_failures = Counter(
            "mcp_auth_failures", "Requests refused by sign-in, by reason.", ["reason"], registry=registry
        )
        self.limited = Counter(
            "mcp_rate_limit_refusals",
            "Calls refused with 429 by a per-caller limit, by server and limit.",
            ["server", "limit"],
            registry=registry,
        )
        # Labelled children by their label values, so a call costs no label lookups.
        self._tool_children: dict[tuple[str, str, str], tuple[Counter, Histogram, Counter]] = {}
        self._in_flight_children: dict[str, Gauge] = {}
        self._request_children: dict[tuple[str, str], Counter] = {}
        self._readings = _Readings()
        registry.register(self._readings)
        ProcessCollector(registry=registry)
        PlatformCollector(registry=registry)
        GCCollector(registry=registry)

    def tool_call(self, server: str, tool: str, outcome: str, seconds: float) -> None:
        """Count one answered tool call (the labelled children are kept: the sets are bounded)."""
        key = (server, tool, outcome)
        children = self._tool_children.get(key)
        if children is None:
            children = self._tool_children[key] = (
                self.tool_calls.labels(server, tool, outcome),
                self.tool_seconds.labels(server, tool),
                self.requests.labels(server, "tools/call"),
            )
        calls, duration, requests = children
        calls.inc()
        duration.observe(seconds)
        requests.inc()

    def calls_in_flight(self, server: str) -> Gauge:
        gauge = self._in_flight_children.get(server)
        if gauge is None:
            gauge = self._in_flight_children[server] = self.in_flight.labels(server)
        return gauge

    def request(self, server: str, method: str) -> None:
        key = (server, method)
        counter = self._request_children.get(key)
        if counter is None:
            counter = self._request_children[key] = self.requests.labels(server, method_label(method))
        counter.inc()

    def add_reading(self, name: str, documentation: str, read: Reading) -> None:
        self._readings.readings.append((name, documentation, read))

    def auth_failed(self, reason: str) -> None:
        self.auth_failures.labels(reason if reason in AUTH_REASONS else "forbidden").inc()

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


def method_label(method: str) -> str:
    return method if method in KNOWN_METHODS else "other"
