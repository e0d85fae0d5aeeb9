"""Make the CJK font d2lmini ships for figures with Chinese text: a subset of Noto Sans CJK SC.

    python tools/cjk_font.py                          # from Debian's fonts-noto-cjk
    python tools/cjk_font.py --source NotoSansCJKsc-Regular.otf

A Chinese figure must render on Colab, Kaggle, Binder and a plain `pip install`, none of which is
sure to have a CJK font, so the package carries one (`d2lmini/fonts/`), under the SIL Open Font
Licence 1.1 that Noto's fonts are published with (no Reserved Font Name, so a subset may keep its
name). The full font is 16 MB; the subset holds what the figures can draw: ASCII, the CJK and
full-width punctuation, the 3,755 common characters of GB 2312's first level, and every character of
the Chinese catalogs: the package's, the notebooks' and the course site's (the site's PDF prints its
Chinese with this font too, tools/build_site.py; tests/test_translations.py and tests/test_site.py fail
when a new translation uses one the subset lacks: run this again).
"""

import argparse
import sys
from pathlib import Path

from fontTools import subset
from fontTools.ttLib import TTCollection, TTFont

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from d2lmini.fonts import CJK_FONT  # noqa: E402
from tools.translations import NOTEBOOK_LOCALE, PACKAGE_LOCALE, read_catalog  # noqa: E402

DEBIAN_SOURCE = Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc")
# The course site's Chinese catalogs (its own pages; tools/build_site.py --update-catalogs).
SITE_LOCALE = ROOT / "site" / "locale" / "zh_CN" / "LC_MESSAGES"
FAMILY = "Noto Sans CJK SC"


def gb2312_level_one() -> str:
    """Return the 3,755 characters of GB 2312's first level (rows 16-55), the common Chinese characters."""
    characters = []
    for row in range(0xB0, 0xD8):
        for cell in range(0xA1, 0xFF):
            try:
                characters.append(bytes((row, cell)).decode("gb2312"))
            except UnicodeDecodeError:  # row 55 ends at 0xF9
                pass
    return "".join(characters)


def catalog_characters() -> str:
    """Return every character the Chinese catalogs use: the package's, the notebooks' and the site's."""
    used = set()
    catalogs = [*PACKAGE_LOCALE.glob("*.po"), *NOTEBOOK_LOCALE.glob("*.po"), *SITE_LOCALE.glob("*.po")]
    for path in sorted(catalogs):
        for message in read_catalog(path):
            strings = message.string if isinstance(message.string, tuple) else (message.string,)
            for string in strings:
                used.update(string or "")
    return "".join(sorted(used))


def wanted_characters() -> str:
    """Return the characters the subset keeps."""
    ascii_printable = "".join(chr(code) for code in range(0x20, 0x7F))
    punctuation = "".join(chr(code) for code in range(0x3000, 0x3040)) + "".join(
        chr(code) for code in range(0xFF01, 0xFF5F)) + "·—–‘’“”…×÷±≤≥≈≠→←↑↓∞√∑∏αβγδεθλμπρσφω"
    return "".join(sorted(set(ascii_printable + punctuation + gb2312_level_one() + catalog_characters())))


def simplified_face(source: Path) -> TTFont:
    """Return the Simplified Chinese face of `source` (an .otf, or Debian's .ttc holding every region)."""
    if source.suffix.lower() != ".ttc":
        return TTFont(source)
    for face in TTCollection(source).fonts:
        if face["name"].getDebugName(1).startswith(FAMILY):
            return face
    raise SystemExit(f"{source} has no {FAMILY} face")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, default=DEBIAN_SOURCE,
                        help="Noto Sans CJK SC Regular (.otf) or Debian's NotoSansCJK-Regular.ttc "
                             "(apt-get install fonts-noto-cjk)")
    args = parser.parse_args(argv)
    if not args.source.exists():
        parser.error(f"{args.source} does not exist: apt-get install fonts-noto-cjk, or pass --source")
    font = simplified_face(args.source)
    options = subset.Options()
    options.name_IDs = ["*"]  # keep the copyright, licence and family names
    options.layout_features = []  # matplotlib lays out no OpenType features: one glyph a character
    options.hinting = False  # matplotlib renders through FreeType's autohinter at figure sizes anyway
    subsetter = subset.Subsetter(options)
    subsetter.populate(text=wanted_characters())
    subsetter.subset(font)
    CJK_FONT.parent.mkdir(exist_ok=True)
    font.save(CJK_FONT)
    print(f"wrote {CJK_FONT.relative_to(ROOT)}: {len(font.getGlyphOrder())} glyphs, "
          f"{CJK_FONT.stat().st_size / 1e6:.2f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
