"""One canonical form per identifier, so that one person gets one pseudonym however their id was typed.

A data subject's id reaches treino typed by people and spreadsheets: a CPF comes as `063.469.421-90`, `06346942190`
or, from a column read as a number, `6346942190` (its leading zero lost). Every spelling must give the same pseudonym
(treino.govern.audit.pseudonym), or the subject's audit trail splits in two. Each identifier kind says which raw
strings it recognises and writes them in one canonical form; a string no kind recognises is only stripped.

    canonical_id("063.469.421-90") -> "06346942190"       canonical_id("6346942190") -> "06346942190"
    canonical_id(" cliente-17 ")   -> "cliente-17"

A new kind (a CNPJ, an e-mail address) is a class with `name`, `recognises(raw)` and `canonical(raw)`, added with
`register_kind`; the first kind that recognises a string wins. Adding a kind changes the pseudonym of the strings it
recognises: do it with a migration that records the old pseudonyms as aliases (see docs/govern.md, "One identifier").

`legacy_ids` are the normalised forms treino wrote pseudonyms of before canonical ids (migration 0009_identity): a
CPF typed without its leading zeros kept them off (`6346942190`). Queries by subject id look for those pseudonyms too.
"""

from __future__ import annotations

import re
from typing import Protocol

from treino.govern.cpf import is_valid_cpf

# The CPF mask, whatever its check digits (a mistyped CPF still names someone), as the audit log has matched it since
# its first version; and bare numbers of 9-10 digits: a CPF whose leading zeros a numeric column dropped.
_CPF_MASKED_RE = re.compile(r"\d{3}\.?\d{3}\.?\d{3}-?\d{2}")
_CPF_SHORT_RE = re.compile(r"\d{9,10}")


class IdentifierKind(Protocol):
    """A kind of identifier: the strings it recognises and their one canonical spelling."""

    name: str

    def recognises(self, raw: str) -> bool: ...

    def canonical(self, raw: str) -> str: ...


class Cpf:
    """The Brazilian individual taxpayer number: 11 digits, the last two check digits (treino.govern.cpf).

    Canonical form: the 11 digits, no mask. A 9- or 10-digit number is a CPF only when, zero-padded to 11, its check
    digits are right (about 1 % of other numbers pass by chance: a customer number of 10 digits that passes gets the
    padded form, which only changes its pseudonym's input, never whom it matches in a CPF column)."""

    name = "cpf"

    def recognises(self, raw: str) -> bool:
        s = raw.strip()
        if _CPF_MASKED_RE.fullmatch(s):
            return True
        return bool(_CPF_SHORT_RE.fullmatch(s)) and is_valid_cpf(s.zfill(11))

    def canonical(self, raw: str) -> str:
        return re.sub(r"\D", "", raw.strip()).zfill(11)


KINDS: list[IdentifierKind] = [Cpf()]


def register_kind(kind: IdentifierKind) -> None:
    """Add an identifier kind, after the ones already known (a CPF stays a CPF)."""
    if any(k.name == kind.name for k in KINDS):
        raise ValueError(f"an identifier kind named {kind.name!r} exists")
    KINDS.append(kind)


def kind_of(raw: str) -> IdentifierKind | None:
    """The first kind that recognises `raw`, or None."""
    return next((k for k in KINDS if k.recognises(raw)), None)


def canonical_id(raw: str) -> str:
    """The one spelling of `raw` that pseudonyms, tombstones and subject matches are made of."""
    kind = kind_of(raw)
    return kind.canonical(raw) if kind is not None else raw.strip()


def legacy_id(raw: str) -> str:
    """What treino normalised `raw` to before canonical ids (up to revision 0008): the CPF mask removed, nothing
    padded, and any other string only stripped."""
    s = raw.strip()
    return re.sub(r"\D", "", s) if _CPF_MASKED_RE.fullmatch(s) else s


def legacy_ids(raw: str) -> list[str]:
    """Every form other than the canonical one that the old normalisation gave for some spelling of `raw`'s
    identifier: for a CPF with leading zeros, the digits without them (`06346942190` -> `6346942190`; a CPF that
    starts with two zeros has two such forms). Empty when every spelling gave the canonical form already."""
    canonical = canonical_id(raw)
    kind = kind_of(raw)
    if kind is None or kind.name != Cpf.name:
        return []
    return [canonical[i:] for i in (1, 2) if canonical[:i] == "0" * i]
