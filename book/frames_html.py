"""The HTML of an explorer on a lesson page: native controls over the frames book/frames.py drew.

book/build.py puts this in place of the explorer's stored widget view and picture: each control
is an <input type="range"> (or a <select> for a choice) with its <label>; moving one shows the
frame of the explorer at the new setting, with that setting's alt text and readout. With no
JavaScript the picture at the explorer's start values still shows.

The page's script is _assets/frames.js, inline after the page's first figure: it runs as soon as
the parser reaches it. The first paint does not wait for it, nor it for the theme's scripts or
MathJax, as an async or deferred script would (a second or so on a busy machine). The frames load
after the page shows: the first one lazily, as the figure nears the viewport, the rest by
frames.js at the same moment.
"""
from __future__ import annotations

import html
import json
from functools import cache
from pathlib import Path

FRAMES_JS = Path(__file__).resolve().parent / "_assets" / "frames.js"
FRAMES_DIR = "_frames"  # the frames' folder in the site (book/build.py copies them there)


@cache
def frames_js() -> str:
    """_assets/frames.js, to put inline in a page (see the module docstring)."""
    text = FRAMES_JS.read_text()
    if "</" in text:
        raise ValueError(f"{FRAMES_JS} holds '</', which would end its inline <script> early")
    return text


def _control(entry_id: str, control: dict) -> str:
    """One labelled control: a slider over the value indices (its readable value in aria-valuetext
    and in an <output> beside it), or a <select> for a parameter with options."""
    cid = f"{entry_id}-{control['name']}"
    label = f'<label for="{cid}">{html.escape(control["label"])}</label>'
    values, start = control["values"], control["start"]
    if control["choice"]:
        options = "".join(f'<option value="{i}"{" selected" if i == start else ""}>{html.escape(v)}</option>'
                          for i, v in enumerate(values))
        field = f'<select id="{cid}" data-t5-control>{options}</select>'
    else:
        field = (f'<input type="range" id="{cid}" data-t5-control min="0" max="{len(values) - 1}" step="1" '
                 f'value="{start}" aria-valuetext="{html.escape(values[start])}">'
                 f'<output for="{cid}" aria-hidden="true">{html.escape(values[start])}</output>')
    return f'<div class="t5-frames-control">{label}{field}</div>'


def _note(entry: dict, rest_link: str) -> str:
    """Which controls move here (over the values the lesson names), and where the others are."""
    live = ", ".join(f"<strong>{html.escape(c['label'])}</strong>" for c in entry["controls"])
    text = (f"Live on this page: {live}, over the values the lesson talks about (each picture was drawn by the "
            f"explorer itself when this site was built).")
    if entry["others"]:
        others = ", ".join(html.escape(o) for o in entry["others"])
        text += f" Its other controls ({others}) and every value in between work {rest_link}."
    else:
        text += f" Every value in between works {rest_link}."
    return f'<p class="t5-frames-note">{text}</p>'


def explorer_html(entry: dict, number: int, root: str, rest_link: str, with_script: bool) -> str:
    """The figure of one explorer: note, controls, the start frame, its readout; the frames' data.

    root: the site's root as seen from the page (".."); rest_link: a phrase saying where the full
    explorer runs (a live-notebook link, or "in the running notebook"); with_script: add frames.js
    (once a page, after its first figure).
    """
    frames_url = f"{root}/{FRAMES_DIR}"
    entry_id = f"t5-explorer-{number}"
    start = 0
    for control in entry["controls"]:  # the frame index of the start values: the last control varies fastest
        start = start * len(control["values"]) + control["start"]
    first = entry["frames"][start]
    data = {"sizes": [len(c["values"]) for c in entry["controls"]],
            "values": [c["values"] for c in entry["controls"]],
            "frames": [{"src": f"{frames_url}/{f['file']}", "alt": f["alt"], "readout": f["readout"]}
                       for f in entry["frames"]]}
    controls = "".join(_control(entry_id, c) for c in entry["controls"])
    script = f"<script>{frames_js()}</script>" if with_script else ""
    # "</" cannot end the JSON's <script> early: JSON may write "<" as \u003c.
    payload = json.dumps(data, ensure_ascii=False).replace("<", "\\u003c")
    return (f'<figure class="t5-frames" id="{entry_id}" data-explorer="{html.escape(entry["explorer"])}">'
            f'{_note(entry, rest_link)}<div class="t5-frames-controls">{controls}</div>'
            f'<img class="t5-frames-image" src="{frames_url}/{first["file"]}" alt="{html.escape(first["alt"])}" '
            f'width="{entry["width"]}" height="{entry["height"]}" loading="lazy" decoding="async">'
            f'<figcaption class="t5-frames-readout" aria-live="polite"><code>{html.escape(first["readout"])}</code>'
            f'</figcaption><script type="application/json" class="t5-frames-data">{payload}</script></figure>{script}')
