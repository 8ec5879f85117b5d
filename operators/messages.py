"""How the operators' reports and the panel write counts: with thousands separators, the
noun agreeing with the number ("1 ray", "3,880,800 of 4,000,000 rays hit")."""

from __future__ import annotations


def format_count(count: int, noun: str | None = None, plural: str | None = None) -> str:
    """``count`` with thousands separators, followed by ``noun`` (singular for 1, else
    ``plural``, by default ``noun`` + "s") when one is given."""
    text = f"{int(count):,}"
    if noun is None:
        return text
    return f"{text} {noun if count == 1 else plural or noun + 's'}"
