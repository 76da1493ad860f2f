"""Local ``$ref`` resolution: a walk that indexes every ``$id``, ``$anchor`` and ``$dynamicAnchor``.

toolguard never fetches anything. A reference resolves against, in order: the schema document itself (its
embedded resources included), and the official draft metaschemas bundled with ``jsonschema_specifications``
(local data, no network). Anything else raises ``RemoteRefRefused``.

The walk visits only keywords that hold subschemas (an ``$id`` inside ``enum`` or an unknown keyword is not an
identifier), follows each draft's identifier rules (``id`` in draft 4, ``$id`` ignored next to ``$ref`` up to
draft 7, ``$anchor``/``$dynamicAnchor`` in 2019-09/2020-12) and is iterative, so a deep schema cannot blow the
stack. Cost: linear in the size of each indexed document.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote, urldefrag, urljoin

from .._exceptions import RemoteRefRefused, SchemaError
from ._keywords import APPLICATOR_LISTS, APPLICATOR_MAPS, APPLICATOR_SINGLE, DRAFT_ORDER
from ._normalize import Draft, detect_draft

__all__ = ["ResourceIndex", "join_uri"]


def join_uri(base: str, ref: str) -> str:
    """Resolve ``ref`` against ``base`` like ``referencing`` does (fragments keep non-hierarchical bases)."""
    if ref.startswith("#"):
        return urldefrag(base)[0] + ref
    return urljoin(base, ref)


def _defrag(uri: str) -> str:
    return urldefrag(uri)[0]


def _subschemas(schema: dict[str, Any], draft: Draft) -> Iterator[tuple[str, Any]]:
    """(relative JSON pointer, subschema) for every keyword that holds schemas."""
    for key in APPLICATOR_SINGLE:
        if key in schema and isinstance(schema[key], (dict, bool)):
            yield "/" + _escape(key), schema[key]
    for key in APPLICATOR_MAPS:
        value = schema.get(key)
        if isinstance(value, dict):
            for name, sub in value.items():
                if isinstance(sub, (dict, bool)):
                    yield f"/{_escape(key)}/{_escape(name)}", sub
    for key in APPLICATOR_LISTS:
        value = schema.get(key)
        if isinstance(value, list):
            for i, sub in enumerate(value):
                if isinstance(sub, (dict, bool)):
                    yield f"/{key}/{i}", sub


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _own_id(schema: dict[str, Any], draft: Draft) -> str | None:
    """The identifier this schema declares, under ``draft``'s rules."""
    order = DRAFT_ORDER[draft]
    key = "id" if order == 4 else "$id"
    ident = schema.get(key)
    if not isinstance(ident, str):
        return None
    if order <= 7 and "$ref" in schema:
        return None
    return ident


class ResourceIndex:
    """Every schema resource reachable without a network, with its anchors.

    ``base_of[id(subschema)]`` is the base URI a subschema's own references resolve against;
    ``draft_of[uri]`` is each resource's draft; ``dynamic_anchors[uri]`` maps a name to the subschema carrying
    ``$dynamicAnchor`` in that resource.
    """

    def __init__(self, root: Any, draft: Draft, *, base_uri: str = "") -> None:
        self.resources: dict[str, Any] = {}
        self.draft_of: dict[str, Draft] = {}
        self.anchors: dict[tuple[str, str], Any] = {}
        self.dynamic_anchors: dict[str, dict[str, Any]] = {}
        self.base_of: dict[int, str] = {}
        self.resource_of: dict[int, str] = {}
        self.root = root
        self.root_draft = draft
        self._keepalive: list[Any] = [root]
        root_id = _own_id(root, draft) if isinstance(root, dict) else None
        self.root_uri = _defrag(join_uri(base_uri, root_id)) if root_id else base_uri
        self._walk(root, self.root_uri, draft)

    def _walk(self, root: Any, uri: str, draft: Draft) -> None:
        self.resources.setdefault(uri, root)
        self.draft_of.setdefault(uri, draft)
        stack: list[tuple[Any, str, str]] = [(root, uri, uri)]
        while stack:
            schema, base, resource = stack.pop()
            if not isinstance(schema, dict):
                continue
            ident = _own_id(schema, draft)
            if ident is not None:
                if ident.startswith("#") and DRAFT_ORDER[draft] <= 7:
                    self.anchors[(resource, ident[1:])] = schema
                else:
                    new = join_uri(base, ident)
                    base, fragment = urldefrag(new)
                    resource = base
                    self.resources.setdefault(base, schema)
                    self.draft_of.setdefault(base, draft)
                    if fragment and not fragment.startswith("/") and DRAFT_ORDER[draft] <= 7:
                        self.anchors[(base, fragment)] = schema
            if DRAFT_ORDER[draft] >= 8:
                anchor = schema.get("$anchor")
                if isinstance(anchor, str):
                    self.anchors[(resource, anchor)] = schema
                dyn = schema.get("$dynamicAnchor")
                if isinstance(dyn, str) and DRAFT_ORDER[draft] >= 9:
                    self.anchors.setdefault((resource, dyn), schema)
                    self.dynamic_anchors.setdefault(resource, {})[dyn] = schema
            self.base_of.setdefault(id(schema), base)
            self.resource_of.setdefault(id(schema), resource)
            for _, sub in _subschemas(schema, draft):
                stack.append((sub, base, resource))

    # -- lookups ---------------------------------------------------------------------------------------------

    def _load_resource(self, uri: str, ref: str, path: str) -> Any:
        """The document at ``uri``: indexed, bundled metaschema, or refused."""
        if uri in self.resources:
            return self.resources[uri]
        try:
            from jsonschema_specifications import REGISTRY
        except ImportError:  # pragma: no cover - jsonschema always brings it
            REGISTRY = None
        if REGISTRY is not None:
            for candidate in (uri, uri.rstrip("#")):
                try:
                    contents = REGISTRY.contents(candidate)
                except Exception:
                    continue
                self._keepalive.append(contents)
                self._walk(contents, uri, detect_draft(contents, self.root_draft))
                return contents
        raise RemoteRefRefused(
            f"$ref {ref!r} points outside this schema ({uri or 'a relative document'}); toolguard never "
            "fetches remote references: inline the referenced schema under $defs",
            path=path,
        )

    def resolve(self, ref: str, base: str, path: str) -> tuple[Any, str]:
        """(subschema, its resource URI) for ``ref`` written in a schema whose base URI is ``base``."""
        full = join_uri(base, ref)
        uri, fragment = urldefrag(full)
        document = self._load_resource(uri, ref, path)
        fragment = unquote(fragment)
        if not fragment:
            return document, uri
        if fragment.startswith("/"):
            return self._pointer(document, fragment, uri, ref, path), uri
        target = self.anchors.get((uri, fragment))
        if target is None:
            raise SchemaError(f"$ref {ref!r}: no anchor {fragment!r} in {uri or 'this schema'}", path=path)
        return target, self.resource_of.get(id(target), uri)

    def _pointer(self, document: Any, pointer: str, uri: str, ref: str, path: str) -> Any:
        node = document
        for raw in pointer.split("/")[1:]:
            token = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and token in node:
                node = node[token]
            elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
                node = node[int(token)]
            else:
                raise SchemaError(f"$ref {ref!r} points to nothing (no {token!r})", path=path)
        if isinstance(node, dict) and id(node) not in self.base_of:
            # A location the walk did not reach (e.g. inside an unknown keyword): index it from here.
            self._walk_embedded(node, uri)
        return node

    def _walk_embedded(self, node: dict[str, Any], uri: str) -> None:
        draft = self.draft_of.get(uri, self.root_draft)
        stack: list[Any] = [node]
        while stack:
            schema = stack.pop()
            if isinstance(schema, dict) and id(schema) not in self.base_of:
                self.base_of[id(schema)] = uri
                self.resource_of[id(schema)] = uri
                stack.extend(sub for _, sub in _subschemas(schema, draft))
