"""MkDocs hook: formulas as MathML, rendered at build time.

``pymdownx.arithmatex`` (generic mode) marks ``$...$`` and ``$$...$$`` in the pages and
docstrings; this hook turns each marked formula into MathML with ``latex2mathml``, which every
current browser renders natively. The site needs no script and no font from a network, so it
reads offline. A formula ``latex2mathml`` cannot read stops the build with its text.
"""

from __future__ import annotations

import html
import re

from latex2mathml.converter import convert

_INLINE = re.compile(r'<span class="arithmatex">\\\((.*?)\\\)</span>', re.S)
_BLOCK = re.compile(r'<div class="arithmatex">\\\[(.*?)\\\]</div>', re.S)


def _mathml(tex: str, display: str, page) -> str:
    tex = html.unescape(tex).strip()
    try:
        return convert(tex, display=display)
    except Exception as exc:  # latex2mathml raises several exception types
        raise ValueError(f"{page.file.src_path}: cannot render formula {tex!r}: {exc}") from exc


def on_page_content(content: str, page, config, files) -> str:  # noqa: ARG001 (the hook's signature)
    content = _BLOCK.sub(
        lambda m: f'<div class="math">{_mathml(m.group(1), "block", page)}</div>', content
    )
    return _INLINE.sub(lambda m: _mathml(m.group(1), "inline", page), content)
