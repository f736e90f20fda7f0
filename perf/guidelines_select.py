"""What the guidelines plug-in costs per agent step (no model is called: it is pure CPU).

Builds a guidelines file of G guidelines (generated sentences over a 400-word vocabulary), a
conversation of M messages, and times ``before_agent_step`` for ``select = "all"`` and
``select = "bm25"`` (top_k 5, window 4), each over S steps, the conversation growing by two
messages per step as in a trial. Prints µs per step, and per step against a 1 s model call (the
share of a trial's time the plug-in adds).

    .venv/bin/python perf/guidelines_select.py [--guidelines 200] [--messages 60] [--steps 400]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import tempfile
import time
from pathlib import Path

from agentrig.plugins import build_plugin
from agentrig.plugins.base import PluginSettings
from agentrig.trial.context import TrialContext
from agentrig.types import Message, TrialKey


def _words(rng: random.Random, vocab: list[str], n: int) -> str:
    return " ".join(rng.choice(vocab) for _ in range(n))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--guidelines", type=int, default=200)
    ap.add_argument("--messages", type=int, default=60)
    ap.add_argument("--steps", type=int, default=400)
    args = ap.parse_args()
    rng = random.Random(0)
    vocab = [f"w{i}" for i in range(400)]
    cats = ("strategy", "recovery", "constraint")
    data = {"guidelines": [{"id": f"g{i}", "text": _words(rng, vocab, 25), "trigger": _words(rng, vocab, 8),
                            "category": cats[i % 3]} for i in range(args.guidelines)]}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "g.json"
        path.write_text(json.dumps(data))
        for select in ("all", "bm25"):
            ctx = TrialContext(key=TrialKey(arm="a", domain="d", task_id="t", trial=0), task=None, seed=0)
            for i in range(args.messages):
                ctx.trajectory.messages.append(Message(role="user" if i % 2 else "assistant",
                                                       content=_words(rng, vocab, 40)))
            plugin = build_plugin(PluginSettings(kind="guidelines", file=str(path), select=select), ctx)
            loop = asyncio.new_event_loop()
            spent = 0.0
            for step in range(args.steps):  # the conversation grows by an agent and a user message per step
                ctx.trajectory.messages.append(Message(role="assistant", content=_words(rng, vocab, 30)))
                ctx.trajectory.messages.append(Message(role="user", content=_words(rng, vocab, 30)))
                t0 = time.perf_counter()
                loop.run_until_complete(plugin.before_agent_step(step))
                spent += time.perf_counter() - t0
            loop.close()
            per = spent / args.steps
            print(f"select={select:<5} guidelines={args.guidelines} messages {args.messages}→"
                  f"{len(ctx.trajectory.messages)}: {per * 1e6:8.1f} µs per agent step "
                  f"({per:.3%} of a 1 s model call)")


if __name__ == "__main__":
    main()
