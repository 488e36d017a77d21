"""The dashboard's two languages: English and Brazilian Portuguese, chosen by the browser's Accept-Language.

The mechanism and the catalog are shared with the CLI: treino.i18n (Locale, Msg, negotiate) and treino.pt_br (PT).
"""

from __future__ import annotations

from treino.i18n import LOCALES, Locale, Msg, negotiate
from treino.pt_br import PT

__all__ = ["LOCALES", "PT", "Locale", "Msg", "negotiate"]
