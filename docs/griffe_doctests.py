"""A Griffe extension for the API reference: fences the ``>>>`` examples in docstrings.

pullback's docstrings are plain text with doctest examples; rendered as Markdown, a line
starting with ``>>>`` would become a nested block quote. This extension wraps each run of
doctest lines (a ``>>>`` line and every non-blank line after it) in a ``pycon`` code fence,
so the examples render as highlighted Python sessions; doctest's ``<BLANKLINE>`` marker
shows as the blank line it stands for. The docstrings themselves stay as
they are, and run unchanged as doctests.
"""

import griffe


def fence_doctests(text):
    """``text`` with every doctest block wrapped in a ``pycon`` fence."""
    out = []
    in_fence = False   # inside a fence the docstring wrote itself
    in_example = False
    for line in text.split("\n"):
        stripped = line.strip()
        if in_example and not stripped:
            out += ["```", ""]
            in_example = False
        if stripped.startswith("```"):
            in_fence = not in_fence
        elif not in_fence and not in_example and stripped.startswith(">>>"):
            out += ["", "```pycon"]
            in_example = True
        if in_example and stripped == "<BLANKLINE>":
            line = ""
        out.append(line)
    if in_example:
        out.append("```")
    return "\n".join(out)


class DoctestFences(griffe.Extension):
    """Fence the doctest examples of every docstring that Griffe loads."""

    def on_object(self, *, obj, loader, **kwargs):
        if obj.docstring is not None:
            obj.docstring.value = fence_doctests(obj.docstring.value)
