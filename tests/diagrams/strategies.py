"""Random flows with hostile node names, for the property-based diagram tests."""

from __future__ import annotations

from datetime import timedelta

from hypothesis import strategies as st

from flowdeck.engine import Flow, Loop, Schedule

HOSTILE = [
    '"',
    "¶ß",  # Mermaid's placeholder for an entity code's `;`
    "ﬂ°°65",  # ... and for its `&#`
    "'",
    "[",
    "]",
    "{",
    "}",
    "(",
    ")",
    "|",
    "<",
    ">",
    "&",
    "&amp;",
    "#quot;",
    "\\",
    "\\n",
    "\n",
    "`",
    ";",
    "end",
    "graph",
    "subgraph",
    "style",
    "classDef",
    "digraph",
    "node",
    "-->",
    "->",
    "-.->",
    "<br/>",
    "<b>x</b>",
    "]]>",
    "%%",
    "é",
    "日本",
    "🙂",
    " ",
]

# Any printable character except the reserved `~` and `#` (refused at registration): no surrogates, no
# control characters (names are keys people type; a newline is offered through HOSTILE).
_CHARS = st.characters(blacklist_categories=("Cs", "Cc", "Co", "Cn"), blacklist_characters="~#")

names = st.lists(
    st.one_of(st.sampled_from(HOSTILE), st.text(_CHARS, min_size=1, max_size=3)), min_size=1, max_size=4
).map("".join)


def _value(ctx: object) -> int:
    return 1


def _done(ctx: object) -> object:
    return Loop.done(1)


@st.composite
def flows(draw: st.DrawFn, depth: int = 2) -> Flow:
    flow = Flow.init(draw(names))
    kinds = ["input", "output", "step", "sleep", "dispatch", "loop", "loop_on", "foreach"]
    if depth > 0:
        kinds += ["subflow", "zip", "race", "gather"]
    for kind in draw(st.lists(st.sampled_from(kinds), min_size=0, max_size=5)):
        name = draw(names)
        match kind:
            case "input":
                flow = flow.input(name, int)
            case "output":
                flow = flow.output(name, _value, type=int)
            case "step":
                flow = flow.step(name, _value)
            case "sleep":
                flow = flow.sleep(name, timedelta(seconds=draw(st.integers(1, 10**6))))
            case "dispatch":
                builder = flow.dispatch(name)
                for arm in draw(st.lists(names, max_size=3)):
                    builder = builder.when(_value, _value, name=arm)
                flow = builder.otherwise(_value, name=draw(names))
            case "loop":
                flow = flow.loop(name, _done)
            case "loop_on":
                flow = flow.loop_on(name, Schedule.fixed(timedelta(seconds=30)), _done)
            case "foreach":
                flow = flow.foreach(name, _value, _value, concurrency=draw(st.none() | st.integers(1, 9)))
            case "subflow":
                flow = flow.subflow(name, draw(flows(depth - 1)), _value)
            case "zip":
                flow = flow.zip(draw(flows(depth - 1)))
            case "race":
                flow = flow.and_then(Flow.race(draw(flows(depth - 1)), draw(flows(depth - 1))))
            case "gather":
                others = draw(st.lists(flows(depth - 1), min_size=2, max_size=3))
                flow = flow.and_then(Flow.gather(*others))
    return flow
