"""Generated sections inside hand-written docs: the text between two HTML comment markers."""


def with_section(text: str, begin: str, end: str, section: str) -> str:
    """``text`` (a whole doc) with what lies between ``begin`` and ``end`` replaced by
    ``section`` (which carries the markers itself), or ``section`` appended if the markers are
    absent."""
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        return head + section + rest.split(end, 1)[1]
    return text.rstrip("\n") + "\n\n" + section + "\n"
