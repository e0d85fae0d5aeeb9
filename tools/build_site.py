"""Build the course site from the stored notebooks (never executed) into build/site/html.

    python tools/build_site.py [--mathjax node_modules/mathjax] [--out build/site]

Runs in a venv with `site/requirements.txt` (Sphinx, MyST-NB, the book theme). The sources are
staged in `<out>/src`: `site/` (conf.py, index.md, the links extension, CSS), the notebooks,
`docs/instructors.md` and pyproject.toml (the repository's address); every notebook is also
copied beside its page for download. `--mathjax` names an npm `mathjax@3` folder whose
`es5/` is served with the site so that math renders without a CDN. Prints the seconds the
build took and the site's size; exits non-zero when Sphinx fails or warns.
"""

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"


def stage(src: Path, mathjax: Path | None) -> None:
    """Copy what the site is built from into the empty folder `src`."""
    shutil.copytree(ROOT / "site", src, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", src / "pyproject.toml")
    shutil.copy(ROOT / "docs" / "instructors.md", src / "instructors.md")
    (src / "notebooks").mkdir()
    (src / "_downloads" / "notebooks").mkdir(parents=True)
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        shutil.copy(path, src / "notebooks" / path.name)
        shutil.copy(path, src / "_downloads" / "notebooks" / path.name)
    if mathjax is not None:
        es5 = mathjax / "es5"
        if not (es5 / "tex-mml-chtml.js").exists():
            raise SystemExit(f"--mathjax {mathjax}: no es5/tex-mml-chtml.js there (npm install mathjax@3)")
        target = src / "_static" / "mathjax"
        target.mkdir(parents=True)
        shutil.copy(es5 / "tex-mml-chtml.js", target)
        shutil.copytree(es5 / "output" / "chtml" / "fonts", target / "output" / "chtml" / "fonts")
        # The speech of each formula (site/conf.py): the enrichment and the English speech rules only.
        shutil.copytree(es5 / "a11y", target / "a11y")
        (target / "sre" / "mathmaps").mkdir(parents=True)
        for rules in ("base.json", "en.json"):
            shutil.copy(es5 / "sre" / "mathmaps" / rules, target / "sre" / "mathmaps" / rules)


def folder_size(folder: Path) -> int:
    """Return the bytes of every file under `folder`."""
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "site", help="default: build/site")
    parser.add_argument("--mathjax", type=Path, help="an npm mathjax@3 folder (node_modules/mathjax)")
    args = parser.parse_args()
    src, html = args.out / "src", args.out / "html"
    for folder in (src, html, args.out / "doctrees"):
        shutil.rmtree(folder, ignore_errors=True)
    stage(src, args.mathjax)
    start = time.perf_counter()
    build = subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-q", "-W", "--keep-going",
                            "-d", str(args.out / "doctrees"), str(src), str(html)], check=False)
    seconds = time.perf_counter() - start
    if build.returncode:
        print(f"the site's build failed (Sphinx exit {build.returncode})", file=sys.stderr)
        return build.returncode
    pages = len(list(html.rglob("*.html")))
    print(f"built {pages} pages into {html} in {seconds:.1f} s; {folder_size(html) / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
