"""The service's duplicate stacks (issue 36): one :class:`indexer.duplicate_stacks.DuplicateStacks` per engine,
made by a start-up hook (cheap: the groups are found on the first request that stacks, then kept until the
library changes), and how a stack appears in an answer."""

from __future__ import annotations

from app.engine import Engine
from app.schemas.duplicates import StackInfo
from indexer.duplicate_stacks import DuplicateStacks, Stacks

COMPONENT = "stacks"


def load_stacks_component(engine: Engine) -> None:
    engine.components[COMPONENT] = DuplicateStacks(engine.images, engine.settings.query.stack_threshold)


def duplicate_stacks(engine: Engine) -> DuplicateStacks:
    stacks: DuplicateStacks = engine.components[COMPONENT]
    return stacks


def current_stacks(engine: Engine) -> Stacks:
    """The stacks now (blocking: the first call after a change finds the groups; run it in the thread pool)."""
    return duplicate_stacks(engine).current()


def stack_info(stacks: Stacks | None, image_id: int) -> StackInfo | None:
    stack = stacks.stack_of(image_id) if stacks is not None else None
    if stack is None:
        return None
    kept = stack[0] if stack[0] in stacks.kept else None  # type: ignore[union-attr]
    return StackInfo(count=len(stack), ids=list(stack), kept=kept)
