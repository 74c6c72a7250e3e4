"""Sphinx tweaks for the course website (loaded through book/_config.yml's local_extensions).

- MathJax on every page, not only on pages with math in their body: the sidebar repeats page
  titles, and some titles hold math.
- No thebe on the pages: launch_buttons.thebe is off, yet Jupyter Book always loads sphinx-thebe,
  whose inline script (naming a CDN) it adds twice, so every page would raise "Identifier
  'THEBE_JS_URL' has already been declared". Other inline scripts added twice are deduplicated.
- Figures keep their alt text: a notebook output stores it in its metadata (image/png -> alt,
  written by `t5lesson.common.figures.describe`); myst-nb reads only width and height from there,
  so `render_image` is wrapped to copy `alt` onto the image too (else Sphinx uses the file name).
- Controls whose accessible name must hold their visible text (WCAG 2.5.3, axe's
  label-content-name-mismatch): the theme's search button says "Search Ctrl+K" but is named
  "Search" by an aria-label, which is dropped so its text names it; the colour-mode button's icons
  carry titles ("Light", "Dark", ...) that count as visible text, so they become aria-hidden and
  the button keeps its aria-label "Color mode"; myst-nb's summary of hidden outputs ("Show the
  result (predict first)", book/build.py's hide_outputs) is named "Toggle hidden content", which
  is dropped so its text names it. Done on the written pages (`build-finished`), the
  same on every page, whatever the page holds.
"""
import re
from pathlib import Path

_SEARCH_BUTTON = re.compile(r'(<button[^>]*\bsearch-button-field\b[^>]*?)\s+aria-label="[^"]*"')
_THEME_ICON = re.compile(r'(<i class="theme-switch [^"]*" data-mode="[^"]*")\s+title="[^"]*"')
_HIDDEN_OUTPUT_SUMMARY = re.compile(r'<summary aria-label="Toggle hidden content">')


def accessible_names(html: str) -> str:
    """The page with the two theme controls fixed (see the module docstring)."""
    html = _SEARCH_BUTTON.sub(r"\1", html)
    html = _HIDDEN_OUTPUT_SUMMARY.sub("<summary>", html)
    return _THEME_ICON.sub(r'\1 aria-hidden="true"', html)


def _fix_pages(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    for page in Path(app.outdir).rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        fixed = accessible_names(text)
        if fixed != text:
            page.write_text(fixed, encoding="utf-8")


def _keep_output_alt_text():
    from docutils import nodes
    from myst_nb.core.render import NbElementRenderer

    original = NbElementRenderer.render_image
    if getattr(original, "_t5book", False):
        return

    def render_image(self, data):
        made = original(self, data)
        alt = data.output_metadata.get(data.mime_type, {}).get("alt")
        if isinstance(alt, str) and alt.strip():
            for node in made:
                if isinstance(node, nodes.image):
                    node["alt"] = " ".join(alt.split())
        return made

    render_image._t5book = True
    NbElementRenderer.render_image = render_image


def _clean_scripts(app, pagename, templatename, context, doctree):
    seen, kept = set(), []
    for js in context.get("script_files", []):
        filename, body = str(getattr(js, "filename", js) or ""), getattr(js, "attributes", {}).get("body", "")
        if "THEBE_JS_URL" in body or filename.endswith("sphinx-thebe.js"):
            continue
        key = (filename, body)  # the same script again, whatever its priority
        if key not in seen:
            seen.add(key)
            kept.append(js)
    context["script_files"] = kept


def setup(app):
    _keep_output_alt_text()
    app.set_html_assets_policy("always")
    app.connect("html-page-context", _clean_scripts, priority=900)
    app.connect("build-finished", _fix_pages)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
