"""Synthetic tool-calling dialogues for the embedded demo model: requests, calls, results, answers.

Theory of operation: every dialogue is drawn from one ``random.Random`` seeded by (seed, split), so a (seed,
count, split) triple always yields the same list. A *request maker* per tool (``_MAKERS``) draws argument
values from small pools, phrases a user request from one of several templates that mention exactly those
values, and returns the expected arguments in the schema's property order (the order a grammar walks them). A
fake backend per tool (``_demo_tools.FAKE_BACKENDS``, the tools of ``toolguard demo``) computes the tool
result, and an answer template turns the result into the final assistant message. Some dialogues add small
talk, a failing tool (the executor's ``Tool 'x' failed: ...`` message, answered with an apology) or an invalid
proposal re-asked with the executor's ``Invalid call to 'x': ...`` message and then corrected; the invalid
proposal itself is context, never a training target (see ``Dialogue.untrained``).

The tool sets are the example sets of ``schemas/tools/*.json`` (OpenAI tool JSON); tools without a maker are
offered in prompts but never called. Splits: value pools are partitioned by a stable hash into a training
part (80%) and a held-out part. ``"train"`` and ``"test"`` draw from the training part (``"test"`` with its
own seed: requests the model has not seen, made of values it has; ``generate_requests`` can exclude the
training texts outright); ``"unseen"`` draws only held-out values (cities, titles, paths, numbers the model
never saw), which measures copying rather than recall. Everything is O(count) time and memory and does no I/O
apart from ``load_tool_sets``.
"""

from __future__ import annotations

import json
import random
import zlib
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from toolguard.local._demo_tools import run_fake_tool

__all__ = [
    "TOOLS_DIR",
    "Dialogue",
    "Example",
    "Split",
    "generate_dialogues",
    "generate_requests",
    "load_tool_sets",
    "training_requests",
]

Split = Literal["train", "test", "unseen"]
ToolSets = Mapping[str, Sequence[Mapping[str, Any]]]

#: The repository's example tool sets (absent in an installed package: the model folder keeps a copy).
TOOLS_DIR = Path(__file__).resolve().parents[2] / "schemas" / "tools"

#: Fraction of each value pool kept out of training (by stable hash of the value).
HELDOUT_FRACTION = 0.2
#: Fraction of string values that are invented words instead of pool values (train and test alike). Invented
#: values force a model to copy rather than recall; at the demo model's training budget (minutes of CPU) a
#: 1M-parameter model does not learn to copy unseen words and starts inventing words instead, so it is off.
INVENTED_FRACTION = 0.0


def _words(text: str) -> list[str]:
    """``"a|b|c"`` -> ``["a", "b", "c"]``: value pools and phrasings, kept compact."""
    return text.split("|")


def load_tool_sets(folder: str | Path = TOOLS_DIR) -> dict[str, list[dict[str, Any]]]:
    """``{set name: [OpenAI tool JSON, ...]}`` from ``folder/*.json``, sorted by file name."""
    return {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in sorted(Path(folder).glob("*.json"))}


# ----------------------------------------------------------------------------------------------------
# Value pools

_CITIES = _words(
    "Paris|London|Tokyo|Berlin|Madrid|Rome|Lisbon|Dublin|Oslo|Stockholm|Helsinki|Copenhagen|Vienna|"
    "Prague|Warsaw|Budapest|Athens|Istanbul|Cairo|Nairobi|Lagos|Johannesburg|Casablanca|Dubai|Mumbai|"
    "Delhi|Bangalore|Karachi|Dhaka|Bangkok|Hanoi|Singapore|Jakarta|Manila|Seoul|Beijing|Shanghai|Osaka|"
    "Kyoto|Sydney|Melbourne|Auckland|Toronto|Montreal|Vancouver|Chicago|Boston|Seattle|Denver|Miami|"
    "Austin|Houston|Dallas|Atlanta|Phoenix|Lima|Bogota|Santiago|Quito|Caracas|Havana|Reykjavik|Edinburgh|"
    "Glasgow|Manchester|Liverpool|Bristol|Amsterdam|Rotterdam|Brussels|Antwerp|Zurich|Geneva|Munich|"
    "Hamburg|Frankfurt|Cologne|Milan|Naples|Venice|Florence|Turin|Barcelona|Valencia|Seville|Porto|"
    "Marseille|Lyon|Nice|Bordeaux|Toulouse|Lille|Nantes|Krakow|Riga|Tallinn|Vilnius|Kyiv|Bucharest|Sofia|"
    "Belgrade|Zagreb|Ljubljana|Tunis|Algiers|Accra|Dakar|Kampala|Doha|Riyadh|Tehran|Baghdad|Kabul|"
    "Tashkent|Almaty|Ulaanbaatar|Taipei|Perth|Brisbane|Adelaide|Wellington|Ottawa|Calgary|"
    "New York|San Francisco|Los Angeles|Las Vegas|New Delhi|Hong Kong|Mexico City|Buenos Aires|"
    "Rio de Janeiro|Sao Paulo|Cape Town|Kuala Lumpur|Tel Aviv|Abu Dhabi|Salt Lake City|San Diego|"
    "St Petersburg|Ho Chi Minh City|Quebec City|Panama City"
)

_TITLES = _words(
    "Team sync|Standup|Project review|Lunch with Sam|Dentist|Budget planning|Design review|"
    "Sprint planning|Retrospective|Call with the bank|Yoga class|Doctor appointment|Board meeting|"
    "Coffee with Maria|Interview|Code review|Release party|Book club|Gym|Car service|Quarterly report|"
    "Marketing sync|Hiring committee|Demo day|Training session|Dinner with Lee|Haircut|Piano lesson|"
    "Client call|Roadmap review|Onboarding|Security audit|Vet appointment|Team lunch|Product launch|"
    "Study group"
)

_PEOPLE = _words(
    "alice|bob|carol|dave|eve|frank|grace|heidi|ivan|judy|oscar|peggy|victor|walter|maria|ahmed|chen|"
    "priya|yuki|omar"
)
_DOMAINS = ["example.com", "example.org", "acme.io", "mail.com"]

_DIRS = _words(
    "docs|notes|src|data|reports|logs|photos|music|projects|backup|tmp|config|drafts|archive|scripts|"
    "docs/api|data/raw|src/app"
)
_FILES = _words(
    "notes.txt|todo.md|config.yaml|report.csv|README.md|data.json|app.log|main.py|hello.txt|shopping.txt|"
    "index.html|settings.ini|errors.log|summary.txt|plan.md|draft.txt|results.json|users.csv|script.sh|"
    "letter.txt|ideas.md|budget.csv"
)
_CONTENTS = _words(
    "hello world|buy milk and eggs|meeting at noon|TODO: fix the tests|remember to call mom|"
    "version 2.0 released|the quick brown fox|all systems nominal|pack the bags|deploy on friday|"
    "water the plants|lorem ipsum|thank you|see you soon|done|backup complete|call the plumber|ship it"
)
_HOSTS = _words(
    "example.com|api.example.com|httpbin.org|news.example.org|docs.python.org|status.example.net|"
    "data.example.io|weather.example.com|shop.example.com|blog.example.org"
)
_URL_PATHS = _words(
    "|/|/index.html|/api/v1/status|/users/42|/get|/posts/1|/health|/about|/feed.xml|/data.json|/v2/items|"
    "/orders|/api/users"
)
_JSON_KEYS = ["name", "title", "id", "status", "count", "email", "city", "note", "price", "user"]
_JSON_WORDS = ["Ada", "Bob", "hello", "done", "open", "Paris", "test", "draft", "red", "blue"]

_MONTHS = _words("January|February|March|April|May|June|July|August|September|October|November|December")


def _stable_hash(value: str) -> int:
    return zlib.crc32(value.encode("utf-8"))


def _in_split(value: str, split: Split) -> bool:
    heldout = (_stable_hash(value) % 1000) < HELDOUT_FRACTION * 1000
    return heldout if split == "unseen" else not heldout


_CONSONANTS, _VOWELS = "bcdfghjklmnprstvwz", "aeiou"
_EXTENSIONS = [".txt", ".md", ".csv", ".json", ".log", ".py", ".yaml"]
_TLDS = [".com", ".org", ".io", ".net", ".dev"]


def _invented_word(rng: random.Random) -> str:
    """A pronounceable word no pool holds ("tavolen"): the model must copy it, it cannot recall it."""
    return "".join(rng.choice(_CONSONANTS) + rng.choice(_VOWELS) for _ in range(rng.randint(2, 3))) + (
        rng.choice(_CONSONANTS) if rng.random() < 0.5 else ""
    )


def _invented(rng: random.Random, style: str) -> str:
    if style == "Name":  # a city, a title
        words = [_invented_word(rng).capitalize() for _ in range(1 if rng.random() < 0.75 else 2)]
        return " ".join(words)
    if style == "file":
        return _invented_word(rng) + rng.choice(_EXTENSIONS)
    if style == "host":
        return _invented_word(rng) + rng.choice(_TLDS)
    return _invented_word(rng)


class _Pools:
    """Value pools for a split (see the module docstring). With ``invented`` > 0, that fraction of string
    values are invented words (``_invented``), which only copying can get right."""

    def __init__(self, split: Split, invented: float = INVENTED_FRACTION) -> None:
        self.split = split
        self.invented = invented

    def pick(self, rng: random.Random, pool: Sequence[str], style: str | None = None) -> str:
        roll = rng.random()
        if style is not None and roll < self.invented:
            return _invented(rng, style)
        candidates = [v for v in pool if _in_split(v, self.split)] or list(pool)
        return rng.choice(candidates)

    def number(self, rng: random.Random) -> int | float:
        while True:
            roll = rng.random()
            if roll < 0.55:
                value: int | float = rng.randint(0, 100)
            elif roll < 0.8:
                value = rng.randint(100, 999)
            elif roll < 0.9:
                value = -rng.randint(1, 500)
            else:
                value = round(rng.uniform(0, 100), rng.choice([1, 2]))
            if _in_split(repr(value), self.split):
                return value


# ----------------------------------------------------------------------------------------------------
# Request makers: (rng, pools) -> (user text, arguments)

Maker = Callable[[random.Random, _Pools], tuple[str, dict[str, Any]]]


def _unit_phrase(rng: random.Random) -> tuple[str, str | None]:
    if rng.random() < 0.6:
        return "", None
    unit = rng.choice(["celsius", "fahrenheit"])
    return rng.choice(
        [
            f" in {unit}",
            f" in {unit.capitalize()}",
            f", in {unit} please",
            f" ({unit})",
            " in °F" if unit == "fahrenheit" else " in °C",
        ]
    ), unit


def _get_weather(rng: random.Random, p: _Pools) -> tuple[str, dict[str, Any]]:
    city = p.pick(rng, _CITIES, "Name")
    unit_txt, unit = _unit_phrase(rng)
    text = rng.choice(
        _words(
            "weather in {c}{u}|What's the weather in {c}{u}?|What is the weather like in {c}{u}?|"
            "How's the weather in {c} today{u}?|Tell me the weather for {c}{u}.|{c} weather{u}|"
            "what's the temperature in {c}{u}|How hot is it in {c} right now{u}?|Is it cold in {c}{u}?|"
            "Current weather in {c}{u}, please.|Can you check the weather in {c}{u}?|weather {c}{u}|"
            "Is it raining in {c}{u}?|What are the conditions in {c}{u}?|how warm is it in {c}{u}|"
            "I'm travelling to {c}. What's the weather there{u}?|temperature in {c}{u}"
        )
    ).format(c=city, u=unit_txt)
    return text, {"city": city, **({"unit": unit} if unit else {})}


def _get_forecast(rng: random.Random, p: _Pools) -> tuple[str, dict[str, Any]]:
    city = p.pick(rng, _CITIES, "Name")
    unit_txt, unit = _unit_phrase(rng)
    roll = rng.random()
    if roll < 0.75:
        days = rng.randint(1, 14)
        text = rng.choice(
            _words(
                "{d}-day forecast for {c}{u}|What's the forecast for {c} for the next {d} days{u}?|"
                "Give me a {d} day forecast in {c}{u}.|forecast {c} {d} days{u}|"
                "Will it rain in {c} in the next {d} days{u}?|"
                "Show the weather forecast for {c}, {d} days{u}."
            )
        ).format(c=city, d=days, u=unit_txt)
    else:
        phrase, days = rng.choice(
            [
                ("tomorrow", 1),
                ("this week", 7),
                ("for the next week", 7),
                ("for the next two weeks", 14),
                ("for the weekend", 2),
            ]
        )
        text = rng.choice(
            [
                "What's the forecast in {c} {w}{u}?",
                "forecast for {c} {w}{u}",
                "Will it be sunny in {c} {w}{u}?",
            ]
        ).format(c=city, w=phrase, u=unit_txt)
    return text, {"city": city, "days": days, **({"unit": unit} if unit else {})}


def _date(rng: random.Random) -> tuple[str, str]:
    year, month, day = rng.choice([2025, 2025, 2026]), rng.randint(1, 12), rng.randint(1, 28)
    iso = f"{year}-{month:02d}-{day:02d}"
    roll = rng.random()
    if roll < 0.55:
        return iso, iso
    if roll < 0.8:
        return f"{_MONTHS[month - 1]} {day}, {year}", iso
    return f"{day} {_MONTHS[month - 1]} {year}", iso


def _time(rng: random.Random) -> tuple[str, str]:
    hour, minute = rng.randint(7, 19), rng.choice([0, 0, 0, 15, 30, 45])
    hhmm = f"{hour:02d}:{minute:02d}"
    if rng.random() < 0.5:
        return hhmm, hhmm
    h12, suffix = (hour - 12 if hour > 12 else hour), ("pm" if hour >= 12 else "am")
    return (f"{h12}{suffix}" if minute == 0 else f"{h12}:{minute:02d}{suffix}"), hhmm


def _create_event(rng: random.Random, p: _Pools) -> tuple[str, dict[str, Any]]:
    title = p.pick(rng, _TITLES, "Name")
    date_txt, date = _date(rng)
    time_txt, hhmm = _time(rng)
    parts = [
        rng.choice(["Schedule", "Create", "Add", "Book", "Set up"]),
        f'"{title}"' if rng.random() < 0.5 else f"an event called {title}",
        f"on {date_txt} at {time_txt}",
    ]
    minutes = rng.choice([15, 30, 45, 60, 60, 90, 120])
    parts.append(rng.choice([f"for {minutes} minutes", f"lasting {minutes} minutes", f"({minutes} min)"]))
    args: dict[str, Any] = {"title": title, "start": f"{date}T{hhmm}:00Z", "duration_minutes": minutes}
    if rng.random() < 0.3:
        people = [f"{p.pick(rng, _PEOPLE, 'word')}@{rng.choice(_DOMAINS)}" for _ in range(rng.randint(1, 2))]
        args["attendees"] = people
        parts.append("with " + " and ".join(people))
    text = " ".join(parts) + rng.choice([".", "", " please.", "!"])
    return (text[0].lower() + text[1:] if rng.random() < 0.3 else text), args


def _list_events(rng: random.Random, p: _Pools) -> tuple[str, dict[str, Any]]:
    date_txt, date = _date(rng)
    text = rng.choice(
        _words(
            "What's on my calendar on {d}?|list my events for {d}|Show my schedule for {d}.|"
            "Do I have any meetings on {d}?|What events do I have on {d}?|calendar for {d}"
        )
    ).format(d=date_txt)
    return text, {"date": date}


def _cancel_event(rng: random.Random, p: _Pools) -> tuple[str, dict[str, Any]]:
    event_id = f"evt_{rng.randint(0, 999):03d}"
    text = rng.choice(
        _words(
            "cancel event {e}|Please cancel {e}.|Delete the event {e} from my calendar.|cancel {e}|"
            "Remove event {e}"
        )
    ).format(e=event_id)
    return text, {"event_id": event_id}


def _path(rng: random.Random, p: _Pools) -> str:
    name = p.pick(rng, _FILES, "file")
    return name if rng.random() < 0.4 else p.pick(rng, _DIRS, "word") + "/" + name


def _read_file(rng: random.Random, p: _Pools) -> tuple[str, dict[str, Any]]:
    path = _path(rng, p)
    if rng.random() < 0.15:
        n = rng.choice([10, 50, 100, 200, 500, 1000])
        return rng.choice(["show the first {n} bytes of {f}", "read {n} bytes of {f}"]).format(n=n, f=path), {
            "path": path,
            "max_bytes": n,
        }
    text = rng.choice(
        _words(
            "read {f}|Show me {f}.|What's in the file {f}?|cat {f}|Open {f}.|Read the file {f} please.|"
            "print the contents of {f}"
        )
    ).format(f=path)
    return text, {"path": path}


def _write_file(rng: random.Random, p: _Pools) -> tuple[str, dict[str, Any]]:
    path, content = _path(rng, p), p.pick(rng, _CONTENTS, "word")
    if rng.random() < 0.25:
        text = rng.choice(["Overwrite {f} with '{c}'", 'replace the contents of {f} with "{c}"']).format(
            f=path, c=content
        )
        return text, {"path": path, "content": content, "overwrite": True}
    text = rng.choice(
        _words(
            "Write '{c}' to {f}|Save \"{c}\" in {f}.|write {f} with the text '{c}'|"
            "Create {f} containing \"{c}\".|Put the text '{c}' into {f}."
        )
    ).format(f=path, c=content)
    return text, {"path": path, "content": content}


def _list_dir(rng: random.Random, p: _Pools) -> tuple[str, dict[str, Any]]:
    if rng.random() < 0.2:
        return rng.choice(["list the files here", "What's in the current directory?", "ls"]), {"path": "."}
    d = p.pick(rng, _DIRS, "word")
    text = rng.choice(
        _words(
            "list files in {d}|What files are in {d}?|Show me the contents of {d}.|ls {d}|"
            "Which files are in the {d} folder?|list the directory {d}|What's inside {d}?"
        )
    )
    return text.format(d=d), {"path": d}


def _url(rng: random.Random, p: _Pools) -> str:
    return (
        rng.choice(["https://", "https://", "http://"]) + p.pick(rng, _HOSTS, "host") + rng.choice(_URL_PATHS)
    )


def _http_get(rng: random.Random, p: _Pools) -> tuple[str, dict[str, Any]]:
    url = _url(rng, p)
    if rng.random() < 0.15:
        t = rng.choice([1, 2, 5, 15, 30])
        return f"fetch {url} with a {t} second timeout", {"url": url, "timeout": t}
    text = rng.choice(
        _words(
            "fetch {u}|GET {u}|Download {u}.|What does {u} return?|Make a request to {u}|"
            "Can you fetch {u} for me?|check {u}"
        )
    ).format(u=url)
    return text, {"url": url}


def _http_post(rng: random.Random, p: _Pools) -> tuple[str, dict[str, Any]]:
    url = _url(rng, p)
    body = {
        k: (p.pick(rng, _JSON_WORDS, "word") if rng.random() < 0.6 else rng.randint(0, 99))
        for k in rng.sample(_JSON_KEYS, rng.randint(1, 2))
    }
    text = rng.choice(["POST {b} to {u}", "send {b} to {u}", "Post the JSON {b} to {u}."]).format(
        b=json.dumps(body), u=url
    )
    return text, {"url": url, "json": body}


def _add(rng: random.Random, p: _Pools) -> tuple[str, dict[str, Any]]:
    a, b = p.number(rng), p.number(rng)
    text = rng.choice(
        _words(
            "add {a} and {b}|What is {a} plus {b}?|what's {a} plus {b}?|sum of {a} and {b}|"
            "Add {a} to {b}.|Calculate {a} plus {b}.|{a} plus {b}"
        )
    ).format(a=a, b=b)
    return text, {"a": a, "b": b}


def _expression(rng: random.Random, p: _Pools) -> str:
    terms = [str(abs(p.number(rng))) for _ in range(rng.randint(2, 3))]
    expr = terms[0]
    for term in terms[1:]:
        expr += f" {rng.choice('+-*/')} {term}"
    if len(terms) == 3 and rng.random() < 0.4:
        left, _, right = expr.rpartition(" ")
        op_pos = left.rstrip().rfind(" ")
        expr = f"({left[:op_pos].strip()}){left[op_pos:]} {right}"
    return expr.replace(" ", "") if rng.random() < 0.2 else expr


def _evaluate(rng: random.Random, p: _Pools) -> tuple[str, dict[str, Any]]:
    expr = _expression(rng, p)
    text = rng.choice(
        ["evaluate {e}", "What is {e}?", "compute {e}", "calculate {e}", "{e} = ?", "what's {e}"]
    ).format(e=expr)
    return text, {"expression": expr}


def _statistics(rng: random.Random, p: _Pools) -> tuple[str, dict[str, Any]]:
    values = [p.number(rng) for _ in range(rng.randint(2, 4))]
    listed = ", ".join(str(v) for v in values)
    word, measures = rng.choice(
        [
            ("mean", None),
            ("average", None),
            ("median", ["median"]),
            ("standard deviation", ["stdev"]),
            ("mean and median", ["mean", "median"]),
            ("mean, median and standard deviation", ["mean", "median", "stdev"]),
        ]
    )
    text = rng.choice(
        _words(
            "What is the {w} of {v}?|{w} of {v}|compute the {w} of [{v}]|"
            "Give me the {w} of these numbers: {v}"
        )
    ).format(w=word, v=listed)
    return text, {"values": values, **({"measures": measures} if measures else {})}


_MAKERS: dict[str, Maker] = {
    "get_weather": _get_weather,
    "get_forecast": _get_forecast,
    "create_event": _create_event,
    "list_events": _list_events,
    "cancel_event": _cancel_event,
    "read_file": _read_file,
    "write_file": _write_file,
    "list_dir": _list_dir,
    "http_get": _http_get,
    "http_post": _http_post,
    "add": _add,
    "evaluate": _evaluate,
    "statistics": _statistics,
}


# ----------------------------------------------------------------------------------------------------
# Final answers


def answer_for(name: str, result: Mapping[str, Any], rng: random.Random) -> str:
    """The assistant's final message after a successful tool result."""
    if name == "get_weather":
        sym = "°C" if result["unit"] == "celsius" else "°F"
        t, c, city = result["temperature"], result["conditions"], result["city"]
        return rng.choice(
            [
                f"It is {t}{sym} and {c} in {city}.",
                f"The weather in {city} is {c}, {t}{sym}.",
                f"{city}: {c}, {t}{sym}.",
            ]
        )
    if name == "get_forecast":
        sym = "°C" if result["unit"] == "celsius" else "°F"
        days = "; ".join(f"day {d['day']}: {d['conditions']}, {d['high']}{sym}" for d in result["days"][:3])
        return f"Forecast for {result['city']}: {days}{', ...' if len(result['days']) > 3 else ''}."
    if name == "create_event":
        ev = result["event"]
        return rng.choice(
            [
                f'Done: "{ev["title"]}" starts {ev["start"]} (id {ev["id"]}).',
                f"I created {ev['title']} at {ev['start']}, id {ev['id']}.",
            ]
        )
    if name == "list_events":
        if not result["events"]:
            return f"You have no events on {result['date']}."
        items = ", ".join(f"{e['title']} at {e['start'][11:16]}" for e in result["events"])
        return f"On {result['date']} you have: {items}."
    if name == "cancel_event":
        return f"Event {result['event_id']} is cancelled."
    if name == "read_file":
        return f"{result['path']} says: {result['content']}"
    if name == "write_file":
        return f"I wrote {result['bytes_written']} bytes to {result['path']}."
    if name == "list_dir":
        return f"{result['path']} contains: {', '.join(result['entries']) or 'nothing'}."
    if name in ("http_get", "http_post"):
        return f"{result['url']} answered {result['status']}: {result['body']}"
    if name in ("add", "evaluate"):
        return rng.choice(
            [f"The result is {result['result']}.", f"It's {result['result']}.", f"{result['result']}"]
        )
    if name == "statistics":
        return ", ".join(f"{k}: {v}" for k, v in result.items()) + "."
    return "Done."


# ----------------------------------------------------------------------------------------------------
# Dialogue assembly

_SMALL_TALK = [
    ("hi", "Hello! How can I help you today?"),
    ("Hello!", "Hi there. What can I do for you?"),
    ("hey", "Hey! What do you need?"),
    ("thanks", "You're welcome!"),
    ("Thank you!", "Happy to help."),
    (
        "who are you?",
        "I am a small demo assistant. I can call tools for the weather, your calendar, files, "
        "arithmetic and web requests.",
    ),
    (
        "What can you do?",
        "I can check the weather and forecasts, manage calendar events, read and write files, "
        "do arithmetic and statistics, and fetch web pages.",
    ),
    ("good morning", "Good morning! How can I help?"),
    (
        "Tell me a joke.",
        "I am only a tiny demo model, so my jokes are small: why did the function return? It had closure.",
    ),
    ("bye", "Goodbye!"),
    ("How are you?", "I'm fine, thanks. What can I do for you?"),
    ("Are you a large language model?", "No, I am a very small model trained only to demonstrate toolguard."),
]

_JSON_TYPES = {str: "string", bool: "boolean", int: "number", float: "number", list: "array", dict: "object"}

_SYSTEM_PROMPTS = [
    None,
    None,
    "You are a helpful assistant.",
    "You are a helpful assistant with access to tools.",
    "Use the tools when they help. Answer briefly.",
]

_UNREADABLE = (
    "Your tool call could not be read: the text inside <tool_call>…</tool_call> is not valid JSON; it is not "
    "a tool call. Write the call again, complete and valid."
)

_FAILURES = {  # tool -> the exception text the executor reports (formatted with the call's arguments)
    "read_file": "FileNotFoundError: no such file: {path}",
    "write_file": "FileExistsError: {path} exists; pass overwrite=true to replace it",
    "list_dir": "FileNotFoundError: no such directory: {path}",
    "http_get": "ConnectError: the host could not be reached",
    "http_post": "ConnectError: the host could not be reached",
    "get_weather": "LookupError: unknown city: {city}",
    "get_forecast": "LookupError: unknown city: {city}",
    "cancel_event": "KeyError: no event with id {event_id}",
}


@dataclass(frozen=True, slots=True)
class Dialogue:
    """A training conversation: messages, the tools offered, and the indexes of assistant messages that are
    context only (invalid proposals shown so the model learns to correct them, never to write them)."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    untrained: frozenset[int] = field(default_factory=frozenset)


@dataclass(frozen=True, slots=True)
class Example:
    """One held-out request: the messages to send, the tools offered, the expected call."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    name: str
    arguments: dict[str, Any]


class _Generator:
    def __init__(
        self, tool_sets: ToolSets, split: Split, rng: random.Random, invented: float = INVENTED_FRACTION
    ) -> None:
        self.sets = {k: [dict(t) for t in v] for k, v in tool_sets.items()}
        self.by_name = {t["function"]["name"]: t for ts in self.sets.values() for t in ts}
        self.names = [n for n in self.by_name if n in _MAKERS]
        self.home = {t["function"]["name"]: s for s, ts in self.sets.items() for t in ts}
        self.pools = _Pools(split, invented)
        self.rng = rng

    def offered(self, name: str) -> list[dict[str, Any]]:
        """The tool list: the set holding ``name``, sometimes with other sets, in random order."""
        home = self.home[name]
        chosen = [home] + [s for s in self.sets if s != home and self.rng.random() < 0.5]
        self.rng.shuffle(chosen)
        return [t for s in chosen for t in self.sets[s]]

    def request(self, names: Sequence[str]) -> tuple[str, str, dict[str, Any]]:
        name = self.rng.choice(list(names))
        text, args = _MAKERS[name](self.rng, self.pools)
        order = list(self.by_name[name]["function"]["parameters"].get("properties", {}))
        return name, text, {k: args[k] for k in order if k in args}

    def call_id(self) -> str:
        return "call_" + "".join(self.rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(8))

    def call(self, name: str, args: Mapping[str, Any], call_id: str) -> dict[str, Any]:
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            ],
        }

    def invalid(self, name: str, args: dict[str, Any]) -> tuple[dict[str, Any], str]:
        """A plausible invalid proposal for ``name`` and the executor's message about it."""
        rng, bad = self.rng, dict(args)
        required = self.by_name[name]["function"]["parameters"].get("required", [])
        roll = rng.random()
        if roll < 0.4 and required:
            key = rng.choice(required)
            bad.pop(key)
            error = f"'{key}' is a required property"
        elif roll < 0.7:
            key = rng.choice(list(bad))
            kind = _JSON_TYPES.get(type(args[key]), "string")
            bad[key] = None if kind == "string" else json.dumps(args[key])
            error = f"/{key}: {json.dumps(bad[key])} is not of type '{kind}'"
        else:
            bad["extra"] = rng.choice(["yes", 1, True])
            error = "Additional properties are not allowed ('extra' was unexpected)"
        return bad, error

    def tool_turn(
        self,
        name: str,
        args: dict[str, Any],
        messages: list[dict[str, Any]],
        untrained: set[int],
        *,
        answer: bool = True,
    ) -> None:
        rng = self.rng
        roll = rng.random()
        if roll < 0.05:  # an invalid proposal, re-asked with the executor's message, then corrected
            bad, error = self.invalid(name, args)
            call_id = self.call_id()
            untrained.add(len(messages))
            messages.append(self.call(name, bad, call_id))
            messages.append(
                {"role": "tool", "tool_call_id": call_id, "content": f"Invalid call to {name!r}: {error}"}
            )
        elif roll < 0.08:  # an unreadable call, re-asked by the agent loop, then corrected
            text = json.dumps({"name": name, "arguments": args})
            cut = rng.randint(len(text) // 2, len(text) - 1)
            untrained.add(len(messages))
            messages.append({"role": "assistant", "content": f"<tool_call>\n{text[:cut]}\n</tool_call>"})
            messages.append({"role": "user", "content": _UNREADABLE})
        call_id = self.call_id()
        messages.append(self.call(name, args, call_id))
        if not answer:
            return
        if roll > 0.93 and name in _FAILURES:
            problem = _FAILURES[name].format(**args)
            content = f"Tool {name!r} failed: {problem}"
            messages.append({"role": "tool", "tool_call_id": call_id, "content": content})
            reply = rng.choice([f"Sorry, {name} failed: {problem}.", f"That did not work: {problem}."])
            messages.append({"role": "assistant", "content": reply})
            return
        try:
            result = run_fake_tool(name, args)
        except (ArithmeticError, ValueError) as exc:  # e.g. evaluate("1 / 0"): the executor's failure message
            problem = f"{type(exc).__name__}: {exc}"
            messages.append(
                {"role": "tool", "tool_call_id": call_id, "content": f"Tool {name!r} failed: {problem}"}
            )
            messages.append({"role": "assistant", "content": f"Sorry, {name} failed: {problem}."})
            return
        messages.append(
            {"role": "tool", "tool_call_id": call_id, "content": json.dumps(result, ensure_ascii=False)}
        )
        messages.append({"role": "assistant", "content": answer_for(name, result, rng)})

    def dialogue(self) -> Dialogue:
        rng = self.rng
        messages: list[dict[str, Any]] = []
        untrained: set[int] = set()
        system = rng.choice(_SYSTEM_PROMPTS)
        if system is not None:
            messages.append({"role": "system", "content": system})
        roll = rng.random()
        if roll < 0.08:
            user, reply = rng.choice(_SMALL_TALK)
            messages += [{"role": "user", "content": user}, {"role": "assistant", "content": reply}]
            tools = self.offered(rng.choice(self.names)) if rng.random() < 0.7 else None
            return Dialogue(messages, tools)
        name, text, args = self.request(self.names)
        tools = self.offered(name)
        messages.append({"role": "user", "content": text})
        if roll < 0.55:  # the call alone: the skill that matters most, at a third of the tokens
            self.tool_turn(name, args, messages, untrained, answer=False)
            return Dialogue(messages, tools, frozenset(untrained))
        self.tool_turn(name, args, messages, untrained)
        if roll > 0.9:  # a second request in the same conversation, from the offered tools
            offered = [n for n in (t["function"]["name"] for t in tools) if n in _MAKERS]
            name2, text2, args2 = self.request(offered)
            messages.append({"role": "user", "content": text2})
            self.tool_turn(name2, args2, messages, untrained)
        return Dialogue(messages, tools, frozenset(untrained))


def generate_dialogues(
    tool_sets: ToolSets,
    *,
    count: int,
    seed: int,
    split: Split = "train",
    invented_fraction: float = INVENTED_FRACTION,
) -> Iterator[Dialogue]:
    """Yield ``count`` dialogues: requests, calls, tool results, answers, small talk, failures and re-asks."""
    gen = _Generator(tool_sets, split, random.Random(f"{seed}:{split}"), invented_fraction)
    for _ in range(count):
        yield gen.dialogue()


def generate_requests(
    tool_sets: ToolSets,
    *,
    count: int,
    seed: int,
    split: Split = "test",
    exclude: Collection[str] = (),
) -> list[Example]:
    """``count`` single-request examples (for accuracy): the prompt messages, tools and expected call.
    Requests whose text is in ``exclude`` (``training_requests``: what the model was trained on) are
    skipped, so a held-out set holds no request seen in training."""
    gen = _Generator(tool_sets, split, random.Random(f"requests:{seed}:{split}"))
    out: list[Example] = []
    for _ in range(count * 20):
        if len(out) == count:
            break
        name, text, args = gen.request(gen.names)
        if text in exclude:
            continue
        out.append(
            Example(
                messages=[{"role": "user", "content": text}],
                tools=gen.offered(name),
                name=name,
                arguments=args,
            )
        )
    return out


def training_requests(dialogues: Iterable[Dialogue]) -> set[str]:
    """The user texts of training ``dialogues`` (for ``generate_requests(exclude=...)``)."""
    return {m["content"] for d in dialogues for m in d.messages if m["role"] == "user" and m["content"]}
