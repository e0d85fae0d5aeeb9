"""Whether a text a wing of the package shows is really in Chinese: shared by the wings' i18n tests.

`CatalogChecks(catalog)` reads the wing's catalog once; a text is Chinese when it holds Chinese
characters and none of the catalog's English pieces (the runs of two or more words between its
{fields} and tags), which an untranslated message would leave behind. The English is read from
the compiled `.mo` the package ships, with the standard library, so the checks run wherever the
package is installed (the lowest versions' venv has the wheel and no Babel).
"""

import gettext
import html
import re
from pathlib import Path

CJK = re.compile(r"[\u4e00-\u9fff]")
PLACEHOLDER = re.compile(r"\{[^{}]*\}")


def english_messages(catalog: Path) -> list[str]:
    """Return the English messages of a wing's catalog (`<wing>.po`), from its compiled `<wing>.mo`."""
    with catalog.with_suffix(".mo").open("rb") as handle:
        keys = gettext.GNUTranslations(handle)._catalog  # msgid -> translation; plurals: (msgid, n)
    return sorted({key[0] if isinstance(key, tuple) else key for key in keys} - {""})


class CatalogChecks:
    """The checks of one wing's catalog (`d2lmini/locale/zh_CN/LC_MESSAGES/<wing>.po`)."""

    def __init__(self, catalog: Path):
        pieces = set()
        for msgid in english_messages(catalog):
            for piece in PLACEHOLDER.split(re.sub(r"<[^>]+>", "{}", msgid)):
                if len([word for word in piece.split() if re.search(r"[A-Za-z]{3,}", word)]) >= 2:
                    pieces.add(piece.strip(" .,;:()"))
        self.english = sorted(pieces, key=len, reverse=True)

    def english_left(self, text: str) -> list[str]:
        """Return the English pieces of the catalog that `text` (HTML or plain) still holds."""
        plain = html.unescape(text)
        return [piece for piece in self.english if piece in plain]

    def assert_chinese(self, text: str) -> None:
        """Fail unless `text` holds Chinese and no English piece of the catalog."""
        assert CJK.search(text), f"no Chinese in {text[:300]!r}"
        assert not self.english_left(text), f"English left: {self.english_left(text)} in {text[:300]!r}"

    @staticmethod
    def assert_english(text: str) -> None:
        """Fail if `text` holds any Chinese."""
        assert not CJK.search(text), f"Chinese in {text[:300]!r}"
