"""The offers, sites and fx catalogs load, are sourced and dated, and users' quote files fail loudly."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from treino.catalog.loader import gpus
from treino.catalog.offers import fx_rate, load_offers_file, offer, offers, site, sites
from treino.errors import CatalogError

DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
HEADER = (
    "name,kind,provider,gpu,gpus,cpu_cores,ram_gb,storage,storage_read_gb_s,interconnect,price,currency,"
    "period,pricing,egress_usd_per_gb,site,example,source,as_of\n"
)
GOOD = (
    "my-8x-h200,dedicated,EVEO,h200-sxm,8,112,2048,8x 3.84 TB,56,nvlink,150000,BRL,month,monthly,0,eveo-sp1,false,"
    "quote #123 by e-mail,2026-11-20\n"
)


def test_every_row_has_source_and_date() -> None:
    assert len(offers()) >= 25
    for o in offers().values():
        assert o.source.strip() and DATE.match(o.as_of), o.name
        assert o.gpu in gpus(), o.name
        assert o.site is None or o.site in sites(), o.name
    for s in sites().values():
        assert s.source.strip() and DATE.match(s.as_of), s.name
    assert DATE.match(fx_rate().date) and fx_rate().source.strip()


def test_brl_dedicated_rows_are_marked_examples() -> None:
    dedicated = [o for o in offers().values() if o.kind == "dedicated"]
    assert {o.gpu for o in dedicated} >= {"l4", "l40s", "h100-sxm", "h200-sxm"}
    for o in dedicated:
        assert o.example and "ILLUSTRATIVE" in o.source, o.name
        assert (o.currency, o.period) == ("BRL", "month")
    for o in offers().values():
        if o.kind == "cloud":
            assert (o.currency, o.period, o.example) == ("USD", "hour", False), o.name


def test_cited_cloud_prices() -> None:
    # hardware-and-prices.md §6.1 and §6.2
    p5en = offer("aws-p5en-48xlarge")
    assert (p5en.gpu, p5en.gpus, p5en.price, p5en.egress_usd_per_gb) == ("h200-sxm", 8, 63.296, 0.09)
    assert offer("gcp-a3-highgpu-8g").egress_usd_per_gb == 0.12
    assert offer("AWS_P5EN_48XLARGE") == p5en  # names are normalised
    providers = {o.provider for o in offers().values()}
    assert providers >= {"AWS", "GCP", "Azure", "Lambda", "RunPod", "EVEO"}


def test_sites_have_the_seed_providers_five() -> None:
    five = {n: (sites()[n].city, sites()[n].country, sites()[n].tier) for n in sites() if n.startswith("eveo-")}
    assert five == {
        "eveo-sp1": ("Cotia", "BR", "III"),
        "eveo-sp2": ("Osasco", "BR", "III"),
        "eveo-pr1": ("Curitiba", "BR", "III"),
        "eveo-ce1": ("Fortaleza", "BR", "III"),
        "eveo-fl1": ("Miami", "US", "III"),
    }
    assert site("aws-sa-east-1").country == "BR"
    assert {"gcp-southamerica-east1", "azure-brazilsouth", "aws-us-east-1"} <= set(sites())


def test_unknown_offer_and_site_get_did_you_mean() -> None:
    with pytest.raises(CatalogError, match=r"Unknown offer 'aws-p5en-48xlarg'\. Did you mean 'aws-p5en-48xlarge'"):
        offer("aws-p5en-48xlarg")
    with pytest.raises(CatalogError, match=r"Unknown site 'eveo-sp3'\. Did you mean .*'eveo-sp1'"):
        site("eveo-sp3")


def test_missing_rate_raises() -> None:
    with pytest.raises(CatalogError, match=r"No BRL per USD rate in fx\.csv on or before 2020-01-01"):
        fx_rate(on="2020-01-01")
    with pytest.raises(CatalogError, match="Only BRL per USD"):
        fx_rate(base="EUR")


def test_local_csv_quotes_load(tmp_path: Path) -> None:
    path = tmp_path / "quotes.csv"
    path.write_text(HEADER + GOOD, encoding="utf-8")
    quotes = load_offers_file(path)
    assert quotes["my-8x-h200"].price == 150_000 and quotes["my-8x-h200"].example is False


@pytest.mark.parametrize(
    ("bad", "field", "words"),
    [
        (GOOD.replace(",150000,", ",abc,"), "price", "valid number"),
        (GOOD.replace(",150000,", ",,"), "price", "valid number"),  # missing price: never zero
        (GOOD.replace("h200-sxm", "h200"), "gpu", "'h200-sxm'"),
        (GOOD.replace("eveo-sp1", "eveo-sp9"), "site", "Unknown site"),
        (GOOD.replace(",2026-11-20", ","), "as_of", ""),
        (GOOD.replace(",BRL,", ",EUR,"), "currency", "BRL"),
    ],
)
def test_local_csv_bad_line_names_file_line_and_field(tmp_path: Path, bad: str, field: str, words: str) -> None:
    path = tmp_path / "quotes.csv"
    path.write_text(HEADER + GOOD.replace("my-8x", "first") + bad, encoding="utf-8")
    with pytest.raises(CatalogError) as err:
        load_offers_file(path)
    assert str(err.value).startswith(f"{path} line 3: field {field!r}: ")
    assert words in str(err.value)


def test_local_yaml_quotes_name_the_line_of_the_bad_field(tmp_path: Path) -> None:
    path = tmp_path / "quotes.yaml"
    row = """  - name: {name}
    kind: dedicated
    provider: EVEO
    gpu: l4
    gpus: 1
    price: {price}
    currency: BRL
    period: month
    egress_usd_per_gb: 0
    site: eveo-sp2
    source: quote by phone
    as_of: 2026-11-20
"""
    path.write_text("offers:\n" + row.format(name="a", price=1500) + row.format(name="b", price="''"), "utf-8")
    with pytest.raises(CatalogError, match=rf"^{re.escape(str(path))} line 19: field 'price': "):
        load_offers_file(path)
    path.write_text("offers:\n" + row.format(name="a", price=1500), "utf-8")
    assert load_offers_file(path)["a"].price == 1500


def test_local_file_duplicate_and_missing(tmp_path: Path) -> None:
    path = tmp_path / "quotes.csv"
    path.write_text(HEADER + GOOD + GOOD, encoding="utf-8")
    with pytest.raises(CatalogError, match="line 3: field 'name': offer 'my-8x-h200' appears twice"):
        load_offers_file(path)
    with pytest.raises(CatalogError, match="No offers file"):
        load_offers_file(tmp_path / "nope.csv")


def test_every_offer_names_its_network_between_servers() -> None:
    """Each offer names its fabric (or none: one server only) with the page that states it, and its NVLink domain."""
    from treino.plan.fabric import parse_fabric

    for o in offers().values():
        fabric = parse_fabric(o.fabric)
        assert fabric.spec == o.fabric, o.name
        assert fabric.kind == "none" or (o.fabric_source or "").strip(), o.name
        assert (o.nvlink_domain is not None) == (o.interconnect == "nvlink"), o.name
    # AWS p5en: 16 x 200 Gb/s EFA at no extra cost; Azure ND H100 v5: a 400G InfiniBand NDR port per GPU, unpriced
    p5en, nd = offer("aws-p5en-48xlarge"), offer("azure-nd96isr-h100-v5")
    assert (p5en.fabric, p5en.fabric_price, p5en.nvlink_domain) == ("16x200g-efa", 0.0, 8)
    assert (nd.fabric, nd.fabric_price) == ("8x400g-ib", None)
    assert all(o.fabric == "none" for o in offers().values() if o.provider in ("EVEO", "Lambda", "RunPod"))


@pytest.mark.parametrize(
    ("row", "field", "words"),
    [
        (GOOD.replace(",nvlink,", ",nvlink,400G,,,8,"), "fabric", "Unknown fabric '400G'"),
        (GOOD.replace(",nvlink,", ",nvlink,8x400g-ib,,,8,"), "fabric_source", "cite it"),
        (GOOD.replace(",nvlink,", ",nvlink,none,500,,8,"), "fabric_price", "a price without a fabric"),
        (GOOD.replace(",nvlink,", ",pcie,none,,,8,"), "nvlink_domain", "needs interconnect nvlink"),
    ],
)
def test_a_quotes_file_with_a_bad_fabric_names_the_field(tmp_path: Path, row: str, field: str, words: str) -> None:
    header = HEADER.replace(",interconnect,", ",interconnect,fabric,fabric_price,fabric_source,nvlink_domain,")
    path = tmp_path / "quotes.csv"
    path.write_text(header + row, encoding="utf-8")
    with pytest.raises(CatalogError) as err:
        load_offers_file(path)
    assert str(err.value).startswith(f"{path} line 2: field {field!r}: ") and words in str(err.value)
    good = GOOD.replace(",nvlink,", ",nvlink,8x400g-ib,9000,quote #123,8,")
    path.write_text(header + good, encoding="utf-8")
    quote = load_offers_file(path)["my-8x-h200"]
    assert (quote.fabric, quote.fabric_price, quote.fabric_source, quote.nvlink_domain) == (
        "8x400g-ib",
        9000.0,
        "quote #123",
        8,
    )
