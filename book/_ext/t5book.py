"""Sphinx tweaks for the course website (loaded through book/_config.yml's local_extensions).

- MathJax on every page, not only on pages with math in their body: the sidebar repeats page
  titles, and some titles hold math.
- No thebe on the pages: launch_buttons.thebe is off, yet Jupyter Book always loads sphinx-thebe,
  whose inline script (naming a CDN) it adds twice, so every page would raise "Identifier
  'THEBE_JS_URL' has already been declared". Other inline scripts added twice are deduplicated.
"""


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
    app.set_html_assets_policy("always")
    app.connect("html-page-context", _clean_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
