"""The language d2lmini speaks: gettext catalogs chosen by one setting, `D2LMINI_LANG`.

Every string the package shows a person goes through `_` (or `ngettext`), with named `{fields}`
filled by `str.format` after translation, so a translator can move them:

    _("perplexity {value:.3g}: no better than a uniform guess").format(value=p)

A string defined at import time (a label in a table) is marked with `N_` and translated where it
is shown, with `_(LABEL)`, so the language chosen later still applies.

The language is read from the environment variable `D2LMINI_LANG` at each call, never guessed
from the system's locale: a Chinese notebook's first cell sets it to "zh_CN", an English one
leaves it unset. An unknown value, or a catalog that is missing or unreadable, falls back to
English and says so once (a warning in both languages). The catalogs are one per wing of the
package (`DOMAINS`), compiled to `locale/<language>/LC_MESSAGES/<domain>.mo` by
`python tools/translations.py compile`.
"""

import gettext
import os
import struct
import warnings
from functools import cache
from pathlib import Path

ENVIRONMENT_VARIABLE = "D2LMINI_LANG"
ENGLISH = "en"
# The languages the course is published in, with their names in their own script.
LANGUAGES = {"en": "English", "zh_CN": "简体中文"}
# Other spellings a person might write for the same language (compared in lower case, "-" as "_").
SPELLINGS = {"en": "en", "en_us": "en", "en_gb": "en", "english": "en",
             "zh": "zh_CN", "zh_cn": "zh_CN", "zh_hans": "zh_CN", "zh_hans_cn": "zh_CN", "chinese": "zh_CN"}
# The package's catalogs, one per wing (tools/translations.py says which files belong to which); "notebooks"
# holds what the course notebooks' own code cells print and draw through `_` (imported there as `tr`).
DOMAINS = ("core", "widgets", "exercises", "grading", "notebooks")
LOCALE_DIR = Path(__file__).with_name("locale")


class LanguageWarning(UserWarning):
    """An unknown `D2LMINI_LANG` or an unreadable catalog: d2lmini shows English instead."""


def language() -> str:
    """Return the language d2lmini speaks now: a key of `LANGUAGES`, from `D2LMINI_LANG` (English when unset).

    An unknown value gives a `LanguageWarning` naming the supported values, once per value, and English.
    """
    value = os.environ.get(ENVIRONMENT_VARIABLE, "").strip()
    if not value:
        return ENGLISH
    known = SPELLINGS.get(value.lower().replace("-", "_"))
    if known is None:
        _warn_unknown_language(value)
        return ENGLISH
    return known


@cache
def _warn_unknown_language(value: str) -> None:
    supported = ", ".join(f"{code} ({name})" for code, name in LANGUAGES.items())
    setting = f"{ENVIRONMENT_VARIABLE}={value!r}"
    warnings.warn(f"{setting} is not a language d2lmini speaks; it speaks {supported}. Showing English. / "
                  f"d2lmini 不支持 {setting}；支持的有 {supported}。"
                  "现以英文显示。", LanguageWarning, stacklevel=4)


@cache
def translations(language_code: str) -> gettext.NullTranslations:
    """Return the gettext translations of `language_code` (every domain chained), English's for "en".

    A missing or unreadable catalog gives a `LanguageWarning` once and leaves its strings in English.
    """
    if language_code == ENGLISH:
        return gettext.NullTranslations()
    chain = gettext.NullTranslations()
    for domain in DOMAINS:
        path = LOCALE_DIR / language_code / "LC_MESSAGES" / f"{domain}.mo"
        try:
            with path.open("rb") as handle:
                catalog = gettext.GNUTranslations(handle)
        # missing, empty, truncated or corrupt
        except (OSError, ValueError, UnicodeDecodeError, IndexError, struct.error) as error:
            warnings.warn(f"d2lmini's {LANGUAGES[language_code]} catalog {path.name} cannot be read "
                          f"({type(error).__name__}); its messages are shown in English. / "
                          f"d2lmini 的中文目录 {path.name} 无法读取（{type(error).__name__}），"
                          "这部分消息以英文显示。",
                          LanguageWarning, stacklevel=3)
            continue
        catalog.add_fallback(chain)
        chain = catalog
    return chain


def _(message: str) -> str:
    """Return `message` in the language d2lmini speaks now (the message itself when untranslated)."""
    return translations(language()).gettext(message)


def translate(message: str, language_code: str) -> str:
    """Return `message` in `language_code` (a key of `LANGUAGES`), whatever `D2LMINI_LANG` says now.

    For tools that write a notebook of one edition from a process of another (tools/run_notebooks.py).
    """
    return translations(language_code).gettext(message)


def ngettext(singular: str, plural: str, count: int) -> str:
    """Return the singular or plural `message` for `count`, in the language d2lmini speaks now."""
    return translations(language()).ngettext(singular, plural, count)


def N_(message: str) -> str:
    """Mark `message` for translation without translating it now: translate it where it is shown, with `_`."""
    return message


def chinese() -> bool:
    """Return whether d2lmini speaks Chinese now (figures then draw with a CJK font)."""
    return language() == "zh_CN"
