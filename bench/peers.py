"""
The peers of the turn benchmark: the same turn shape on LangGraph (PostgreSQL checkpointer) and DBOS.

The turn: a user message, three rounds in which a scripted model calls an echo tool, then a reply.
Each peer runs in its own process (`python -m bench.peers NAME DATABASE_URL TURNS CONCURRENCY`) and
prints one JSON line: per-turn latencies and the wall time, sequential and concurrent.
"""

import json
import sys
import threading
import time
import uuid
from collections.abc import Callable

ROUNDS = 3
CONVERSATION_TURNS = 10  # turns per conversation, as in the Waypoint measurement


def fan_out(worker: Callable[[], list[float]], *, threads: int) -> dict:
    """Run `worker` on `threads` threads at once; gather the latencies each returns and the wall time."""
    latencies: list[float] = []
    lock = threading.Lock()

    def run() -> None:
        mine = worker()
        with lock:
            latencies.extend(mine)

    pool = [threading.Thread(target=run) for _ in range(threads)]
    began, cpu = time.perf_counter(), time.process_time()
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    # This process's CPU, every thread's: the workers' and what they start (a publisher, a heartbeat).
    return {"latencies": latencies, "wall": time.perf_counter() - began, "cpu": time.process_time() - cpu}


def _drive(turn: Callable[[str, int], None], *, turns: int, concurrency: int) -> dict:
    """Run `turns` turns over `concurrency` threads, each on its own conversations, timing each turn."""
    per_thread = turns // concurrency

    def worker() -> list[float]:
        mine = []
        conversation = ""
        for i in range(per_thread):
            if i % CONVERSATION_TURNS == 0:
                conversation = str(uuid.uuid4())
            began = time.perf_counter()
            turn(conversation, i)
            mine.append(time.perf_counter() - began)
        return mine

    return fan_out(worker, threads=concurrency)


def langgraph(url: str, turns: int, concurrency: int) -> dict:
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langchain_core.tools import tool
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode
    from psycopg.rows import dict_row
    from psycopg_pool import ConnectionPool

    @tool
    def lookup_order(order_id: str, round: int) -> dict:
        """Look an order up (echoes its arguments)."""
        return {"order_id": order_id, "round": round}

    def agent(state: MessagesState) -> dict:
        messages = state["messages"]
        last_human = max(i for i, m in enumerate(messages) if isinstance(m, HumanMessage))
        done = sum(1 for m in messages[last_human:] if isinstance(m, AIMessage))
        if done < ROUNDS:
            call = {"name": "lookup_order", "args": {"order_id": "A-1", "round": done + 1}, "id": f"call_{uuid.uuid4().hex[:12]}"}
            return {"messages": [AIMessage(content="", tool_calls=[call])]}
        result = next(m.content for m in reversed(messages) if isinstance(m, ToolMessage))
        return {"messages": [AIMessage(content=f"Done: {result}")]}

    def route(state: MessagesState) -> str:
        return "tools" if state["messages"][-1].tool_calls else END

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode([lookup_order]))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", route, ["tools", END])
    graph.add_edge("tools", "agent")

    kwargs = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
    with ConnectionPool(url, min_size=concurrency, max_size=concurrency, kwargs=kwargs) as pool:
        saver = PostgresSaver(pool)
        saver.setup()
        app = graph.compile(checkpointer=saver)

        def turn(conversation: str, i: int) -> None:
            out = app.invoke(
                {"messages": [HumanMessage(content=f"where is my order ({i})")]},
                {"configurable": {"thread_id": conversation}},
                durability="sync",
            )
            assert out["messages"][-1].content.startswith("Done:")

        turn(str(uuid.uuid4()), 0)  # warm up: imports, prepared tables
        return {"sequential": _drive(turn, turns=turns, concurrency=1),
                "concurrent": _drive(turn, turns=turns, concurrency=concurrency)}


def dbos(url: str, turns: int, concurrency: int) -> dict:
    from dbos import DBOS

    DBOS(config={"name": "waypoint-bench", "system_database_url": url, "log_level": "WARNING",
                 "sys_db_pool_size": concurrency + 4})

    @DBOS.step()
    def model_round(message: str, round: int, last_result: dict | None) -> dict:
        if round <= ROUNDS:
            return {"call": {"tool": "lookup_order", "arguments": {"order_id": "A-1", "round": round}}}
        return {"text": f"Done: {json.dumps(last_result)}"}

    @DBOS.step()
    def lookup_order(arguments: dict) -> dict:
        return dict(arguments)

    @DBOS.workflow()
    def agent_turn(conversation: str, message: str) -> str:
        result = None
        for round in range(1, ROUNDS + 2):
            answer = model_round(message, round, result)
            if "text" in answer:
                return answer["text"]
            result = lookup_order(answer["call"]["arguments"])
        return ""

    DBOS.launch()
    try:
        def turn(conversation: str, i: int) -> None:
            assert agent_turn(conversation, f"where is my order ({i})").startswith("Done:")

        turn(str(uuid.uuid4()), 0)
        return {"sequential": _drive(turn, turns=turns, concurrency=1),
                "concurrent": _drive(turn, turns=turns, concurrency=concurrency)}
    finally:
        DBOS.destroy()


PEERS = {"langgraph": langgraph, "dbos": dbos}


def main() -> None:
    name, url, turns, concurrency = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    result = PEERS[name](url, turns, concurrency)
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
