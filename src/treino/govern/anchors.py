"""Anchors of the audit chain: its head (seq, hash, time), signed, written outside the server's reach.

The chain's checkpoints (treino.govern.audit) are signed with the server key and kept in the database: whoever holds
both can rewrite the chain wholesale, recompute every later hash and sign new checkpoints, and `verify` passes. An
anchor is a copy of the head kept where that person cannot write (a WORM bucket, another team's log server, a
remote append-only file): `check` recomputes the chain from its records and proves that every record up to the
last anchor is the one that was there when the anchor was written.

One anchor is one JSON object (one line of the anchor file; the body of an `audit.anchor` webhook):

    {"v": 1, "seq": 41, "hash": "<sha256 hex of record 41>", "time": 1764650000.123, "reason": "interval",
     "hmac": "<HMAC-SHA256(server key, utf8(f"anchor:{seq}:{hash}:{time!r}")) hex>"}

`reason` is "interval" or "shutdown". The HMAC (in its own domain, so it is never a valid checkpoint HMAC) lets the
key's holder tell the server's anchors from lines someone else appended; the protection against the key's holder is
where the anchors are kept, not the HMAC.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from treino.errors import TreinoError
from treino.govern.audit import GENESIS_HASH, record_hash
from treino.i18n import N_, Msg, json_problem, message_of

ANCHOR_FORMAT_VERSION = 1
ANCHOR_REASONS = (N_("interval"), N_("shutdown"))


@dataclass(frozen=True, slots=True)
class Anchor:
    seq: int
    hash: str
    time: float
    reason: str
    hmac: str
    line: int = 0  # its line in the anchor file (1-based; 0: not read from a file)


def anchor_hmac(key: bytes, seq: int, hash_: str, time_s: float) -> str:
    return hmac.new(key, f"anchor:{seq}:{hash_}:{time_s!r}".encode(), hashlib.sha256).hexdigest()


def make_anchor(key: bytes, seq: int, hash_: str, time_s: float, reason: str) -> dict[str, Any]:
    """The JSON object of an anchor of record `seq` (its hash `hash_`), signed with `key`."""
    return {
        "v": ANCHOR_FORMAT_VERSION,
        "seq": seq,
        "hash": hash_,
        "time": float(time_s),
        "reason": reason,
        "hmac": anchor_hmac(key, seq, hash_, float(time_s)),
    }


class AnchorFileError(TreinoError):
    """An anchor file that cannot be read as anchors: which line, and why."""


def parse_anchors(lines: Iterable[str], source: str) -> list[Anchor]:
    """The anchors of an anchor file's lines (blank lines skipped); AnchorFileError at the first line that is not
    one, naming it."""
    anchors = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            if not isinstance(obj, dict):
                raise ValueError(Msg("not a JSON object"))
            anchor = _anchor(obj, n)
        except (ValueError, KeyError, TypeError) as exc:
            shown = line.strip()[:80]
            # json's own words with their position (str(exc)), a Msg of _anchor's, or a KeyError's field name
            why = (
                Msg(
                    "{problem}: line {line} column {column} (char {pos})",
                    problem=json_problem(exc),
                    line=exc.lineno,
                    column=exc.colno,
                    pos=exc.pos,
                )
                if isinstance(exc, json.JSONDecodeError)
                else message_of(exc)
            )
            raise AnchorFileError(
                Msg(
                    "{source} line {n} is not an audit anchor ({why}): {shown!r}. To fix: restore the anchor file from "
                    "its write-once copy; each line is one JSON object written by 'treino server --audit-anchor'.",
                    source=source,
                    n=n,
                    why=why,
                    shown=shown,
                )
            ) from exc
        anchors.append(anchor)
    return anchors


def _anchor(obj: Mapping[str, Any], line: int) -> Anchor:
    if obj.get("v") != ANCHOR_FORMAT_VERSION:
        raise ValueError(Msg("format version {v!r}, not {version}", v=obj.get("v"), version=ANCHOR_FORMAT_VERSION))
    seq, hash_, time_s, reason, mac = obj["seq"], obj["hash"], obj["time"], obj["reason"], obj["hmac"]
    if type(seq) is not int or seq < 1:
        raise ValueError(Msg("seq {seq!r} is not a record number", seq=seq))
    for name, hex_ in (("hash", hash_), ("hmac", mac)):
        if not isinstance(hex_, str) or len(hex_) != 64 or any(c not in "0123456789abcdef" for c in hex_):
            raise ValueError(Msg("{name} is not 64 hex digits", name=name))
    if type(time_s) not in (int, float):
        raise ValueError(Msg("time {time_s!r} is not unix seconds", time_s=time_s))
    if reason not in ANCHOR_REASONS:
        raise ValueError(Msg("reason {reason!r} is not one of {valid}", reason=reason, valid=", ".join(ANCHOR_REASONS)))
    return Anchor(seq, hash_, float(time_s), reason, mac, line)


@dataclass(frozen=True)
class AnchorResult:
    ok: bool
    records: int  # records recomputed (up to the first bad one)
    anchors: int  # anchors checked
    reason: str
    first_bad_anchor: Anchor | None = None
    first_bad_seq: int | None = None


def check(records: Iterable[Mapping[str, Any]], anchors: list[Anchor], key: bytes | None = None) -> AnchorResult:
    """Recompute the chain from `records` (in seq order, typed as in the database: treino.govern.audit.read_export)
    and check each anchor against it: the hash recomputed at the anchor's seq must be the anchor's. A chain that
    does not link, or a stored hash that is not its record's, fails too. With `key`, each anchor's HMAC is checked.
    The first anchor that disagrees is named by its file line; every record up to the last anchor that agrees is
    proven unchanged since that anchor was written."""
    if key is not None:
        for a in anchors:
            if not hmac.compare_digest(anchor_hmac(key, a.seq, a.hash, a.time), a.hmac):
                return AnchorResult(
                    False,
                    0,
                    0,
                    Msg("anchor at line {line}: its HMAC does not verify (not written by this server)", line=a.line),
                    a,
                )
    wanted: dict[int, list[Anchor]] = {}
    for a in anchors:
        wanted.setdefault(a.seq, []).append(a)
    recomputed: dict[int, str] = {}
    expected, prev_hash, n = 1, GENESIS_HASH, 0
    last_anchor_seq = max(wanted, default=0)
    for rec in records:
        seq = rec["seq"]
        if seq != expected or rec["prev_hash"] != prev_hash or record_hash(rec) != rec["hash"]:
            return AnchorResult(
                False,
                n,
                0,
                Msg("record {seq}: the chain does not link here; run 'treino audit verify' for why", seq=seq),
                None,
                seq,
            )
        prev_hash, expected, n = rec["hash"], seq + 1, n + 1
        if seq in wanted:
            recomputed[seq] = prev_hash
        if seq >= last_anchor_seq:
            break  # records past the last anchor are not anchored: plain verify covers them
    checked = 0
    for a in sorted(anchors, key=lambda a: a.line):
        got = recomputed.get(a.seq)
        when = _utc(a.time)
        if got is None:
            return AnchorResult(
                False,
                n,
                checked,
                Msg(
                    "anchor at line {line} ({reason}, {when}) names record {seq}, but the log ends at record {n}: "
                    "records were deleted after it was written",
                    line=a.line,
                    reason=Msg(a.reason),
                    when=when,
                    seq=a.seq,
                    n=n,
                ),
                a,
                n + 1,
            )
        if got != a.hash:
            return AnchorResult(
                False,
                n,
                checked,
                Msg(
                    "anchor at line {line} ({reason}, {when}) disagrees: record {seq}'s hash is now {got}..., the "
                    "anchor holds {held}...: a record up to {seq} was changed after {when}, and the chain was "
                    "rewritten consistently (by someone holding the database and the key)",
                    line=a.line,
                    reason=Msg(a.reason),
                    when=when,
                    seq=a.seq,
                    got=got[:12],
                    held=a.hash[:12],
                ),
                a,
                a.seq,
            )
        checked += 1
    if not anchors:
        return AnchorResult(True, n, 0, Msg("the anchor file holds no anchors: nothing is proven beyond plain verify"))
    last = max(anchors, key=lambda a: a.seq)
    return AnchorResult(
        True,
        n,
        checked,
        Msg(  # a Msg: `treino audit verify --anchors` words it in the CLI's language
            "{checked} anchor(s) agree with the recomputed chain: records 1-{last} are unchanged since {when}",
            checked=checked,
            last=str(last.seq),
            when=_utc(last.time),
        ),
    )


def _utc(time_s: float) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(time_s, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
