"""CPF detection: the check-digit algorithm plus context, over plain values and over pyarrow tables.

A CPF is 11 digits, `NNN.NNN.NNN-DV`; the last two are check digits computed from the first nine (Receita Federal's
algorithm, ../shared/reference/lgpd-requirements.md §7.3). Two decimal check digits mean that a random 11-digit
number passes about 1 % of the time (the reference measured 0.998 % over 200k samples), so check digits alone cannot
tell a CPF column from a column of phone or order numbers: `scan_table` flags a column only when a share of its
values far above that 1 % are valid CPFs, or when its name says CPF and its values have the CPF shape (context).

    is_valid_cpf("123.456.789-09")    -> True      (the reference's worked example)
    scan_values(["123.456.789-09", "12345678900", None])  -> CpfScan(valid=1, invalid=1, candidates=2)
    scan_table(table)                 -> [ColumnFinding(column="cpf", valid_cpfs=2000, sample_size=2000, ...)]
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no py.typed marker
import pyarrow.compute as pc  # type: ignore[import-untyped]

from treino.errors import TreinoError
from treino.i18n import Msg

# A CPF inside any text: bare or formatted, not part of a longer digit run (reference §7.3, CPF_RE).
CPF_RE = re.compile(r"(?<!\d)(\d{3})\.?(\d{3})\.?(\d{3})-?(\d{2})(?!\d)")

# A column is flagged when at least this share of its sampled non-null values hold a valid CPF. Random 11-digit
# numbers pass the check digits with p ~= 0.01; for a sample of n values the count of chance passes is
# Binomial(n, 0.01), and P(share >= 10 %) is below 1e-6 from n = 100 on (Chernoff: exp(-n * KL(0.1 || 0.01)),
# KL = 0.144 nats) and about 1e-600 at the default 10,000-row sample, while a real CPF column scores ~100 % and a
# free-text column that mentions a CPF in one row out of ten still scores 10 %.
VALID_SHARE_FLAG = 0.10
# Context: a column whose name says CPF is flagged when this share of its values have the CPF shape, whatever
# their check digits (masked, test or mistyped CPFs are still CPFs to a reader).
CONTEXT_SHAPE_SHARE = 0.90
CONTEXT_NAME_RE = re.compile(r"cpf|documento|tax_?id|(?:^|[^a-z])doc(?:$|[^a-z])", re.IGNORECASE)
SAMPLE_ROWS = 10_000
CPF_INT_MIN = 10**8  # integer columns lose leading zeros: 9 to 11 digits are read back zero-padded to 11


def _check_digit(digits: str, first_weight: int) -> int:
    """Weights first_weight, ..., 2 over `digits`; r = sum mod 11; the digit is 0 if r < 2 else 11 - r (§7.3)."""
    total = sum(int(d) * w for d, w in zip(digits, range(first_weight, 1, -1), strict=True))
    r = total % 11
    return 0 if r < 2 else 11 - r


def check_digits(first_nine: str) -> str:
    """The two check digits for the first nine digits of a CPF."""
    if len(first_nine) != 9 or not first_nine.isascii() or not first_nine.isdigit():
        raise TreinoError(Msg("A CPF's check digits follow nine digits, not {digits!r}.", digits=first_nine))
    dv1 = _check_digit(first_nine, 10)
    dv2 = _check_digit(first_nine + str(dv1), 11)
    return f"{dv1}{dv2}"


def make_cpf(first_nine: str, formatted: bool = True) -> str:
    """A valid CPF from nine digits: `123.456.789-09` (or bare `12345678909`)."""
    d = first_nine + check_digits(first_nine)
    return f"{d[:3]}.{d[3:6]}.{d[6:9]}-{d[9:]}" if formatted else d


def cpf_digits(text: str) -> str:
    """The text without the CPF mask's '.', '-' and surrounding spaces: '123.456.789-09' -> '12345678909'."""
    return text.strip().replace(".", "").replace("-", "")


def is_valid_cpf(text: str | int) -> bool:
    """True for 11 digits (after removing '.' and '-') whose two check digits are right and that are not one
    repeated digit (000.000.000-00 passes the arithmetic but is no CPF, §7.3 step 4). An int is zero-padded."""
    d = f"{text:011d}" if isinstance(text, int) else cpf_digits(text)
    if len(d) != 11 or not d.isascii() or not d.isdigit() or d == d[0] * 11:
        return False
    return check_digits(d[:9]) == d[9:]


@dataclass(frozen=True)
class CpfScan:
    """Counts over values: `candidates` have the CPF shape somewhere in them; `valid` of those hold at least one
    CPF with right check digits; `invalid` = candidates - valid. Nulls and other values count in none."""

    valid: int
    invalid: int
    candidates: int


def _value_text(value: str | int | None) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return None
    if isinstance(value, int):  # more than 11 digits never match CPF_RE (a longer digit run)
        return f"{value:011d}" if value >= CPF_INT_MIN else None
    return value


def scan_values(values: Iterable[str | int | None]) -> CpfScan:
    """Count values that contain the CPF shape (bare, formatted, or inside text) and those with a valid CPF."""
    valid = candidates = 0
    for value in values:
        text = _value_text(value)
        if not text:
            continue
        matches = [m.group(0) for m in CPF_RE.finditer(text)]
        if not matches:
            continue
        candidates += 1
        if any(is_valid_cpf(m) for m in matches):
            valid += 1
    return CpfScan(valid=valid, invalid=candidates - valid, candidates=candidates)


@dataclass(frozen=True)
class ColumnFinding:
    """A column that holds CPFs. `context` is True when the column's name says CPF (see CONTEXT_NAME_RE)."""

    column: str
    valid_cpfs: int  # sampled values holding a valid CPF
    sample_size: int  # sampled non-null values
    context: bool
    candidates: int = 0  # sampled values with the CPF shape

    @property
    def valid_share(self) -> float:
        return self.valid_cpfs / self.sample_size if self.sample_size else 0.0

    def describe(self) -> str:
        """In English; a Msg, which a client words in its language (treino.i18n)."""
        if self.context:
            return Msg(
                "column '{column}': {valid:,} of {sampled:,} sampled values are valid CPFs (and its name says CPF)",
                column=self.column,
                valid=self.valid_cpfs,
                sampled=self.sample_size,
            )
        return Msg(
            "column '{column}': {valid:,} of {sampled:,} sampled values are valid CPFs",
            column=self.column,
            valid=self.valid_cpfs,
            sampled=self.sample_size,
        )


def _sample(column: pa.ChunkedArray | pa.Array, sample_rows: int) -> list[str | int | None]:
    """Up to `sample_rows` evenly spaced values (deterministic: the same table always gives the same sample)."""
    n = len(column)
    if n > sample_rows:
        step = n / sample_rows
        column = pc.take(column, pa.array([math.floor(i * step) for i in range(sample_rows)], pa.int64()))
    values: list[str | int | None] = column.to_pylist()
    return values


def _scannable(type_: pa.DataType) -> bool:
    return bool(pa.types.is_string(type_) or pa.types.is_large_string(type_) or pa.types.is_integer(type_))


def scan_column(name: str, column: pa.ChunkedArray | pa.Array, sample_rows: int = SAMPLE_ROWS) -> ColumnFinding | None:
    """The finding for one column, or None when it does not look like it holds CPFs."""
    if not _scannable(column.type):
        return None
    sample = [v for v in _sample(column, sample_rows) if v is not None]
    if not sample:
        return None
    scan = scan_values(sample)
    context = bool(CONTEXT_NAME_RE.search(name))
    by_digits = scan.valid >= max(1, math.ceil(VALID_SHARE_FLAG * len(sample)))
    by_context = context and scan.candidates >= CONTEXT_SHAPE_SHARE * len(sample)
    if not (by_digits or by_context):
        return None
    return ColumnFinding(name, scan.valid, len(sample), context, scan.candidates)


def scan_table(table: pa.Table, sample_rows: int = SAMPLE_ROWS) -> list[ColumnFinding]:
    """Every string or integer column of `table` that holds CPFs, judged on up to `sample_rows` evenly spaced rows."""
    findings = []
    for name in table.column_names:
        finding = scan_column(name, table.column(name), sample_rows)
        if finding is not None:
            findings.append(finding)
    return findings
