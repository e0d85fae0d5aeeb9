"""Tests for d2lmini.i18n: one setting chooses the language; bad values or catalogs fall back to English."""

import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from d2lmini import i18n
from d2lmini.i18n import LanguageWarning, _


@pytest.fixture(autouse=True)
def fresh_warnings_and_catalogs():
    """Each test sees the 'say it once' warnings and the loaded catalogs anew."""
    i18n.translations.cache_clear()
    i18n._warn_unknown_language.cache_clear()
    yield
    i18n.translations.cache_clear()
    i18n._warn_unknown_language.cache_clear()


def a_translated_message(language_code="zh_CN"):
    """Return (English, translation) of one message of the shipped catalogs."""
    catalog = i18n.translations(language_code)
    english = next(key for key in catalog._catalog if isinstance(key, str) and key)
    return english, catalog._catalog[english]


def test_english_is_spoken_when_the_setting_is_unset(monkeypatch):
    monkeypatch.delenv("D2LMINI_LANG", raising=False)
    english, _chinese = a_translated_message()
    assert i18n.language() == "en"
    assert _(english) == english


@pytest.mark.parametrize("value", ["zh_CN", "zh-CN", "zh", "ZH_cn", " zh_CN ", "zh-Hans"])
def test_chinese_is_spoken_under_each_spelling_of_it(monkeypatch, value):
    monkeypatch.setenv("D2LMINI_LANG", value)
    english, chinese = a_translated_message()
    assert i18n.language() == "zh_CN"
    assert _(english) == chinese != english


def test_the_setting_is_read_at_each_call_not_once_at_import(monkeypatch):
    english, chinese = a_translated_message()
    monkeypatch.setenv("D2LMINI_LANG", "zh_CN")
    assert _(english) == chinese
    monkeypatch.setenv("D2LMINI_LANG", "en")
    assert _(english) == english


def test_an_unknown_language_names_the_supported_ones_once_and_falls_back_to_english(monkeypatch):
    monkeypatch.setenv("D2LMINI_LANG", "fr_FR")
    english, _chinese = a_translated_message()
    with pytest.warns(LanguageWarning) as caught:
        assert _(english) == english
        assert _(english) == english
    assert len(caught) == 1
    message = str(caught[0].message)
    for code in i18n.LANGUAGES:
        assert code in message
    assert "'fr_FR'" in message and "不支持" in message


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=30))
def test_any_value_of_the_setting_gives_a_language_or_english_with_a_warning(value):
    i18n._warn_unknown_language.cache_clear()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("D2LMINI_LANG", value.replace("\x00", ""))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            spoken = i18n.language()
    assert spoken in i18n.LANGUAGES
    stripped = value.replace("\x00", "").strip()
    known = i18n.SPELLINGS.get(stripped.lower().replace("-", "_"))
    if stripped and known is None:
        assert [w.category for w in caught] == [LanguageWarning]
    else:
        assert not caught


@pytest.mark.parametrize("damage", ["missing", "empty", "garbage", "truncated"])
def test_a_missing_or_broken_catalog_falls_back_to_english_and_says_so_once(monkeypatch, tmp_path, damage):
    english, chinese = a_translated_message()
    folder = tmp_path / "zh_CN" / "LC_MESSAGES"
    folder.mkdir(parents=True)
    for domain in i18n.DOMAINS:
        source = (i18n.LOCALE_DIR / "zh_CN" / "LC_MESSAGES" / f"{domain}.mo").read_bytes()
        data = {"missing": None, "empty": b"", "garbage": b"\xde\x12\x04\x95" + b"\xff" * 40,
                "truncated": source[: len(source) // 3]}[damage]
        if data is not None:
            (folder / f"{domain}.mo").write_bytes(data)
    monkeypatch.setattr(i18n, "LOCALE_DIR", tmp_path)
    i18n.translations.cache_clear()  # a_translated_message loaded the real catalogs
    monkeypatch.setenv("D2LMINI_LANG", "zh_CN")
    with pytest.warns(LanguageWarning, match="catalog"):
        assert _(english) == english
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _(english) == english  # said once, not at every string


def test_plural_forms_follow_the_language(monkeypatch):
    monkeypatch.delenv("D2LMINI_LANG", raising=False)
    assert i18n.ngettext("{n} step", "{n} steps", 1) == "{n} step"
    assert i18n.ngettext("{n} step", "{n} steps", 3) == "{n} steps"


def test_a_marked_constant_is_translated_where_it_is_shown(monkeypatch):
    english, chinese = a_translated_message()
    constant = i18n.N_(english)
    assert constant == english
    monkeypatch.setenv("D2LMINI_LANG", "zh_CN")
    assert _(constant) == chinese
