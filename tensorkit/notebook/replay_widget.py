"""The replay widget (anywidget): recorded backward steps, stepped in the browser.

Its synced traits are ``passes`` (:func:`~tensorkit.notebook.replay.replay_passes` models),
``pass_index`` (the pass shown) and ``position`` (steps run, 0 before the first). The front end
(``replay.js``) moves ``position`` itself (Next / Previous / Reset / Run to end, keys n p r e)
with no kernel call; setting it from Python moves the view. Its display bundle carries the
same passes as a recording (:mod:`~tensorkit.notebook.recorded`), replayable with no kernel.
"""

from __future__ import annotations

from typing import Any

import anywidget
import traitlets

from .recorded import recording_payload
from .widgets import STATIC, _FallbackHTML

__all__ = ["ReplayWidget"]


class ReplayWidget(_FallbackHTML, anywidget.AnyWidget):
    """Replay recorded backward passes: the graph with the current node highlighted and the
    stepper's panel of its gradients."""

    _esm = STATIC / "replay.js"
    _css = STATIC / "widgets.css"
    passes = traitlets.List().tag(sync=True)
    pass_index = traitlets.Int(0).tag(sync=True)
    position = traitlets.Int(0).tag(sync=True)

    def __init__(self, passes: list[dict], **kwargs: Any) -> None:
        if not passes:
            raise ValueError("ReplayWidget needs at least one pass with recorded steps")
        super().__init__(passes=passes, **kwargs)

    @property
    def graph(self) -> dict:
        """The backward graph of the pass shown."""
        return self.passes[self.pass_index]["graph"]

    @traitlets.validate("pass_index")
    def _valid_pass(self, proposal: dict) -> int:
        index = proposal["value"]
        if not 0 <= index < len(self.passes):
            raise traitlets.TraitError(
                f"pass_index must be in [0, {len(self.passes)}), got {index}"
            )
        return index

    @traitlets.validate("position")
    def _valid_position(self, proposal: dict) -> int:
        position = proposal["value"]
        total = len(self.passes[self.pass_index]["steps"]) if self.passes else 0
        if not 0 <= position <= total:
            raise traitlets.TraitError(f"position must be in [0, {total}], got {position}")
        return position

    def _recording(self) -> dict:
        return recording_payload(
            ["replay"], replay=self.passes, pass_index=self.pass_index, position=self.position
        )
