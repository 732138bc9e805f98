"""An MkDocs hook: doctest's ``<BLANKLINE>`` marker in a page's ``pycon`` blocks (which run
as tests, where the marker is needed) shows as the blank line it stands for."""

import re

MARKER = re.compile(r"^([ \t]*)<BLANKLINE>[ \t]*$", re.M)


def on_page_markdown(markdown, page, config, files):
    return MARKER.sub("", markdown)
