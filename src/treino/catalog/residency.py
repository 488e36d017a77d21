"""`--residency`: an ISO 3166-1 alpha-2 country code (any case), or a site from the catalog, which stands for the
country it is in. Anything else is a usage error with a did-you-mean, never an empty answer."""

from __future__ import annotations

import difflib

from treino.errors import UnknownNameError
from treino.i18n import Msg

# ISO 3166-1 alpha-2, the 249 officially assigned codes.
_ALPHA2 = """
    AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS BT BV BW BY BZ
    CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM DO DZ EC EE EG EH ER ES ET FI FJ FK FM FO
    FR GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY HK HM HN HR HT HU ID IE IL IM IN IO IQ IR IS IT JE
    JM JO JP KE KG KH KI KM KN KP KR KW KY KZ LA LB LC LI LK LR LS LT LU LV LY MA MC MD ME MF MG MH MK ML MM MN MO
    MP MQ MR MS MT MU MV MW MX MY MZ NA NC NE NF NG NI NL NO NP NR NU NZ OM PA PE PF PG PH PK PL PM PN PR PS PT PW
    PY QA RE RO RS RU RW SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV SX SY SZ TC TD TF TG TH TJ TK TL TM
    TN TO TR TT TV TW TZ UA UG UM US UY UZ VA VC VE VG VI VN VU WF WS YE YT ZA ZM ZW
"""
ISO_3166_ALPHA2 = frozenset(_ALPHA2.split())


def residency_country(text: str) -> str:
    """The ISO-2 country `text` names: a country code in any case ('br' -> 'BR'), or a catalog site's country
    ('eveo-sp1' -> 'BR'). Raises UnknownNameError (exit 2) with the closest codes otherwise."""
    from treino.catalog.offers import sites

    value = text.strip()
    if value.upper() in ISO_3166_ALPHA2:
        return value.upper()
    table = sites()
    key = value.lower().replace("_", "-").replace(" ", "-")
    if key in table:
        return table[key].country
    countries = sorted({s.country for s in table.values()})
    close = difflib.get_close_matches(value.upper(), countries, n=1, cutoff=0.5) or difflib.get_close_matches(
        key, sorted(table), n=1, cutoff=0.6
    )
    if not close and len(value) > 2:  # 'Brasil', 'Brazil': a country written out; its first two letters often match
        close = [c for c in countries if c == value[:2].upper()]
    hint = Msg(" Did you mean '{name}'?", name=close[0]) if close else ""
    raise UnknownNameError(
        Msg(
            "--residency {text!r} is neither an ISO 3166-1 alpha-2 country code nor a site.{hint} To fix: give a "
            "two-letter country code (the catalog's sites are in {countries}) or a site name from 'treino sites'.",
            text=text,
            hint=hint,
            countries=", ".join(countries),
        )
    )
