"""What a user would pick instead, in process: ``python -m bench.peers KIND N REPEAT``.

Owns: one batch of N trivial async tools (return a constant) run by LangGraph's ``ToolNode``
inside a one-node graph (how ToolNode is used: 1.x refuses a bare ``ainvoke`` outside a
graph), or by a naive ``asyncio.gather`` loop. Prints a JSON list of wall seconds per call,
one per repeat. Runs in its own process so its imports touch nothing else measured.
Must not: run unless asked (``langgraph`` is only in the ``bench`` extra).
"""

from __future__ import annotations

import asyncio
import sys
import time

import msgspec

__all__ = ["main"]


async def _tool(x: int) -> str:
    return "x"


async def _gather(n: int, repeat: int) -> list[float]:
    out = []
    await asyncio.gather(*(_tool(i) for i in range(10)))  # warm
    for _ in range(repeat):
        started = time.perf_counter()
        results = await asyncio.gather(*(_tool(i) for i in range(n)))
        out.append((time.perf_counter() - started) / n)
        assert len(results) == n
    return out


async def _langgraph(n: int, repeat: int) -> list[float]:
    from langchain_core.messages import AIMessage
    from langchain_core.tools import StructuredTool
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode

    tool = StructuredTool.from_function(
        coroutine=_tool, name="noop", description="Return a constant."
    )
    graph = StateGraph(MessagesState)
    graph.add_node("tools", ToolNode([tool]))
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    app = graph.compile()

    def batch(size: int) -> MessagesState:
        calls = [{"name": "noop", "args": {"x": i}, "id": f"t{i}"} for i in range(size)]
        return {"messages": [AIMessage(content="", tool_calls=calls)]}

    await app.ainvoke(batch(10))  # warm
    out = []
    for _ in range(repeat):
        state = batch(n)
        started = time.perf_counter()
        result = await app.ainvoke(state)
        out.append((time.perf_counter() - started) / n)
        assert len(result["messages"]) == n + 1
    return out


def main(argv: list[str]) -> int:
    kind, n, repeat = argv[0], int(argv[1]), int(argv[2])
    run = {"gather": _gather, "langgraph": _langgraph}[kind]
    sys.stdout.buffer.write(msgspec.json.encode(asyncio.run(run(n, repeat))) + b"\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
