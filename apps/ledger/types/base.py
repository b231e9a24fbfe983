"""
What every event kind shares: the base class, the registry of kinds by name, and decoding an entry.

Pure: no Django. Each kind is a frozen dataclass whose fields are its payload, registered under its
name with `register`; the log stores `kind` and `payload` and turns them back into these classes
with `decode`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from functools import cache, cached_property
from typing import Any, ClassVar


@dataclass(frozen=True)
class EventKind:
    kind: ClassVar[str] = ""
    # Fields added to a kind after entries of it were written: left out of the payload while empty
    # (or False or "" where that is the default), so an entry that does not use them reads (and
    # hashes) as it always did. A field whose default is None keeps a False it was given.
    added: ClassVar[tuple[str, ...]] = ()
    # Payload names that are not Python names (`from`), by the field that holds them (`from_`).
    spelled: ClassVar[dict[str, str]] = {}

    def payload(self) -> dict[str, Any]:
        out = asdict(self)
        for name in self.added:
            default = self.__dataclass_fields__[name].default
            if out[name] in (None, {}, []) or (out[name] is False and default is False) or (out[name] == "" and default == ""):
                del out[name]
        for name, key in self.spelled.items():
            if name in out:
                out[key] = out.pop(name)
        return out


# Every kind by its name: the one registry, filled as the modules of this package are imported.
KINDS: dict[str, type[EventKind]] = {}


def register(name: str):
    """Register an event class as the kind `name`."""

    def add(cls: type[EventKind]) -> type[EventKind]:
        cls.kind = name
        KINDS[name] = cls
        return cls

    return add


def decode(kind: str, payload: dict[str, Any]) -> EventKind:
    """
    Turn a stored kind and payload back into its dataclass.

    Unknown payload keys are ignored so that older code can read newer logs.
    :raises KeyError: the kind is unknown
    """
    cls = KINDS[kind]
    names = _field_names(cls)
    by_key = {key: name for name, key in cls.spelled.items()}
    return cls(**{by_key.get(k, k): v for k, v in payload.items() if by_key.get(k, k) in names})


@cache
def _field_names(cls: type[EventKind]) -> frozenset[str]:
    return frozenset(f.name for f in fields(cls))


@dataclass(frozen=True)
class Recorded:
    """One stored event: its position in the log, its attribution and its decoded body."""

    seq: int
    kind: str
    turn_id: str
    actor: str
    created_at: str
    payload: dict[str, Any]

    @cached_property
    def body(self) -> EventKind:
        """The entry as its dataclass, decoded once; readers match on it and read its fields."""
        return decode(self.kind, self.payload)
