"""A sixty-node workflow for the diagram viewer's tests: five stages, each a gather of three branches of
four steps, after an input it waits on, so a large drawing is painted and can be steered."""

from __future__ import annotations

from flowdeck.engine import Flow

STAGES, BRANCHES, STEPS = 5, 3, 4


def one(ctx: object) -> int:
    return 1


def _branch(stage: int, branch: int) -> Flow:
    flow = Flow.init(f"stage{stage}_branch{branch}")
    for step in range(STEPS):
        flow = flow.output(f"s{stage}_b{branch}_step{step}", one, type=int)
    return flow


def _sixty() -> Flow:
    flow = Flow.init("sixty").input("go", bool)
    for stage in range(STAGES):
        flow = flow.and_then(Flow.gather(*(_branch(stage, b) for b in range(BRANCHES))))
    return flow


sixty = _sixty()
