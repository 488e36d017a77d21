"""The CPF scanner on valid CPFs, wrong check digits, repeated digits and random 11-digit numbers.

Golden examples from ../shared/reference/lgpd-requirements.md §7.3: 123.456.789-09 and 222.333.666-38 are valid,
123.456.789-00 and 111.111.111-11 are not; a random 11-digit number passes the check digits ~1 % of the time.
"""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from treino.errors import TreinoError
from treino.govern.cpf import CPF_INT_MIN, check_digits, is_valid_cpf, make_cpf, scan_table, scan_values


@pytest.mark.parametrize("cpf", ["123.456.789-09", "12345678909", "222.333.666-38", 12345678909])
def test_published_valid_examples(cpf: str | int) -> None:
    assert is_valid_cpf(cpf)


@pytest.mark.parametrize(
    "text",
    ["123.456.789-00", "111.111.111-11", "000.000.000-00", "99999999999", "1234567890", "123456789091", "", "abc"],
)
def test_invalid(text: str) -> None:
    assert not is_valid_cpf(text)


def test_worked_example_check_digits() -> None:
    assert check_digits("123456789") == "09"  # sums 210 and 255 in §7.3


def test_generated_cpfs_valid_and_every_wrong_check_digit_invalid() -> None:
    rng = random.Random(1)
    for _ in range(500):
        nine = f"{rng.randrange(10**9):09d}"
        if nine == nine[0] * 9:
            continue
        cpf = make_cpf(nine, formatted=False)
        assert is_valid_cpf(cpf) and is_valid_cpf(make_cpf(nine))
        for wrong in range(10):
            if wrong != int(cpf[9]):
                assert not is_valid_cpf(cpf[:9] + str(wrong) + cpf[10])
            if wrong != int(cpf[10]):
                assert not is_valid_cpf(cpf[:10] + str(wrong))


def test_random_11_digit_numbers_pass_about_one_percent() -> None:
    rng = random.Random(2024)
    values = [f"{rng.randrange(10**11):011d}" for _ in range(50_000)]
    scan = scan_values(values)
    assert scan.candidates == 50_000
    assert 0.008 < scan.valid / scan.candidates < 0.012  # 1 % +- 4.5 sigma (sigma = 0.045 % at n = 50k)


def test_scan_values_formats_text_ints_and_nulls() -> None:
    scan = scan_values(["123.456.789-09", "cliente 222.333.666-38 ligou", "123.456.789-00", None, "", 12345678909, 42])
    assert scan == type(scan)(valid=3, invalid=1, candidates=4)


def _random_ids(rng: random.Random, n: int) -> list[str]:
    return [f"{rng.randrange(10**10, 10**11)}" for _ in range(n)]


def test_scan_table_flags_cpfs_not_random_ids() -> None:
    rng = random.Random(3)
    n = 5_000
    cpfs = [make_cpf(f"{rng.randrange(1, 10**9):09d}") for _ in range(n)]
    table = pa.table(
        {
            "cpf": cpfs,
            "order_id": _random_ids(rng, n),
            "phone": pa.array([int(x) for x in _random_ids(rng, n)], pa.int64()),
            "bare": [c.replace(".", "").replace("-", "") for c in cpfs],
            "idade": pa.array([rng.randint(18, 80) for _ in range(n)], pa.int32()),
            "nota": [f"pagou com o cpf {c}" if i % 5 == 0 else "sem dados" for i, c in enumerate(cpfs)],
        }
    )
    findings = {f.column: f for f in scan_table(table)}
    assert set(findings) == {"cpf", "bare", "nota"}
    assert findings["cpf"].valid_cpfs == n and findings["cpf"].sample_size == n and findings["cpf"].context
    assert not findings["bare"].context
    assert findings["nota"].valid_cpfs == n // 5


def test_scan_table_samples_large_tables() -> None:
    rng = random.Random(4)
    cpfs = [make_cpf(f"{rng.randrange(1, 10**9):09d}") for _ in range(30_000)]
    (finding,) = scan_table(pa.table({"x": cpfs}), sample_rows=1_000)
    assert finding.sample_size == 1_000 and finding.valid_cpfs == 1_000


def test_context_flags_a_cpf_named_column_with_bad_check_digits() -> None:
    rng = random.Random(5)
    ids = _random_ids(rng, 1_000)  # ~1 % valid: not flagged by check digits alone
    assert scan_table(pa.table({"codigo": ids})) == []
    (finding,) = scan_table(pa.table({"nr_cpf": ids}))
    assert finding.context and finding.valid_cpfs < 30
    (doc,) = scan_table(pa.table({"doc": ids}))
    assert doc.context
    assert scan_table(pa.table({"doctor": ids})) == []


def test_make_cpf_formats_unless_told_not_to_and_refuses_what_is_not_nine_digits() -> None:
    assert make_cpf("123456789") == "123.456.789-09"
    assert make_cpf("123456789", formatted=False) == "12345678909"
    for bad in ("12345678", "1234567890", "12345678a", "１２３４５６７８９"):  # the last in full-width digits
        with pytest.raises(TreinoError) as refused:
            check_digits(bad)
        assert str(refused.value) == f"A CPF's check digits follow nine digits, not {bad!r}."  # the input named


def test_digits_of_other_scripts_and_short_numbers_are_no_cpf() -> None:
    # Python's int() reads full-width and Arabic-Indic digits: 123.456.789-09 written so must still not pass
    assert not is_valid_cpf("１２３４５６７８９０９")
    assert not is_valid_cpf("١٢٣٤٥٦٧٨٩٠٩")
    assert not is_valid_cpf("12345") and not is_valid_cpf("123.456")


def test_integer_columns_are_read_back_zero_padded_from_nine_digits() -> None:
    assert scan_values([CPF_INT_MIN]).candidates == 1  # 001.000.000-00 in shape
    assert scan_values([CPF_INT_MIN - 1, 10**11, -12345678909]).candidates == 0
    assert scan_values([12345678909, True]).valid == 1  # a bool is not a number here


def test_the_sample_is_spread_over_the_whole_column() -> None:
    # 20 order numbers, then 10 CPFs: a sample of 10 evenly spaced rows (0, 3, ..., 27) reaches three of the CPFs
    values = [f"pedido {i}" for i in range(20)] + [make_cpf(f"{100000000 + 7919 * i:09d}") for i in range(10)]
    (finding,) = scan_table(pa.table({"obs": values}), sample_rows=10)
    assert (finding.valid_cpfs, finding.sample_size, finding.candidates) == (3, 10, 3)


def test_large_strings_are_scanned() -> None:
    table = pa.table({"doc": pa.array([make_cpf(f"{100000000 + i:09d}") for i in range(5)], pa.large_string())})
    assert [f.column for f in scan_table(table)] == ["doc"]


def test_the_flag_thresholds_are_inclusive() -> None:
    valid, shaped = make_cpf("123456789"), "123.456.789-00"  # shaped: a CPF's form, wrong check digits
    # by check digits: 1 valid of 10 is the 10 % share, flagged; 1 of 5 as well (at least one valid value)
    (finding,) = scan_table(pa.table({"obs": [valid] + ["x"] * 9}))
    assert (finding.valid_cpfs, finding.sample_size, finding.candidates, finding.context) == (1, 10, 1, False)
    assert len(scan_table(pa.table({"obs": [valid] + ["x"] * 4}))) == 1
    assert scan_table(pa.table({"obs": [valid] + ["x"] * 10})) == []  # 1 of 11: under 10 %
    # by context: 9 of 10 in the CPF's shape in a column named so is the 90 % share, flagged; 1 of 10 is not
    (finding,) = scan_table(pa.table({"cpf": [shaped] * 9 + ["x"]}))
    assert (finding.valid_cpfs, finding.candidates, finding.context) == (0, 9, True)
    assert scan_table(pa.table({"cpf": [shaped] * 8 + ["x"] * 2})) == []
    assert scan_table(pa.table({"cpf": [shaped] + ["x"] * 9})) == []


def test_a_finding_describes_itself() -> None:
    (finding,) = scan_table(pa.table({"cpf": [make_cpf("123456789")] * 1234 + ["x"] * 766}))
    assert finding.describe() == "column 'cpf': 1,234 of 2,000 sampled values are valid CPFs (and its name says CPF)"
    (finding,) = scan_table(pa.table({"obs": [make_cpf("123456789")] * 3}))
    assert finding.describe() == "column 'obs': 3 of 3 sampled values are valid CPFs"
    assert finding.valid_share == 1.0
