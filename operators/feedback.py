"""What a user sees while a query waits for a compiled kernel: a large batch that reaches
core before its kernel is ready waits for it to compile or load (core/backend.py's latency
rule; small batches never wait). Blender's progress indicator and a status-bar message
show it, and both go when the query returns."""

from __future__ import annotations

import contextlib

import bpy

from ..core.backend import notify_waits


@contextlib.contextmanager
def kernel_waits_shown():
    """Around core queries, in the operator's thread: the first wait of the block shows
    the progress indicator and its message until the block ends."""
    shown: list = []

    def show(message: str) -> None:
        if shown:
            return
        context = bpy.context
        window_manager, workspace = context.window_manager, context.workspace
        if window_manager is not None:
            window_manager.progress_begin(0, 1)
        if workspace is not None:
            workspace.status_text_set(message)
        shown.append((window_manager, workspace))

    try:
        with notify_waits(show):
            yield
    finally:
        for window_manager, workspace in shown:
            if window_manager is not None:
                window_manager.progress_end()
            if workspace is not None:
                workspace.status_text_set(None)
