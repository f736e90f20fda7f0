"""A real OpenAI-compatible HTTP server on 127.0.0.1 for tests, the offline demo and benchmarks.

    async with FakeEndpoint() as fake:          # GET {prefix}/models, POST {prefix}/chat/completions
        fake.push("rate_limit", Fault("server_error", status=503))   # the next two chat calls fail
        fake.push_reply({"content": None, "tool_calls": [{"name": "lookup", "arguments": {"q": "x"}}]})
        ...  # point a client at fake.base_url; inspect fake.requests / fake.max_in_flight

What it imitates, because the channel and ``agentrig doctor`` diagnose from it:

- only ``{prefix}/models`` and ``{prefix}/chat/completions`` exist; any other path is aiohttp's
  plain-text ``404: Not Found`` (a known path with the wrong method is a 405);
- a wrong key is a 401 that echoes the key masked (``sk-fa***cdef``) as OpenAI does; no key is a
  401 saying so; an unknown model is a 404 with code ``model_not_found``;
- faults (``push``, or ``fault_rate`` at random from ``random.Random(seed)``): see ``Fault`` kinds
  in ``_fake_bodies.FAULT_KINDS``; a ``Fault(on="models")`` is taken by the models route instead;
- a reply comes from the scripted queue, else ``responder(body)`` (sync or async; may also return a
  ``Fault`` or kind string), else the default: a call to the tool that ``tool_choice`` forces (or
  the first tool for ``"required"``) with arguments built from its schema, otherwise text ``OK``;
  ``"stream": true`` is answered as server-sent chunks ending with ``[DONE]``.

``ThreadedFakeEndpoint`` runs one on its own loop in a daemon thread for sync and subprocess tests;
``python -m agentrig.testing.fake_endpoint`` serves one from the command line (first stdout line:
the base URL). Out-of-process control, no auth: ``POST /_fake/faults``, ``POST /_fake/replies``
(JSON lists), ``POST /_fake/reset``, ``GET /_fake/stats``, ``GET /_fake/requests``. Each record
(``RecordedRequest``) holds the request, the status answered, the usage of the completion answered
and the kind of fault injected; ``log=FILE`` (``--log``, every served endpoint's option) also
appends each one to FILE as a JSON line (no body) as it is answered, so a test that SIGKILLs the
endpoint mid-run still counts what it served.

``personality="vllm-no-auto-tool-choice"`` (``--personality``, ``--window``) makes it behave like a
real server: vLLM, llama-cpp-python, Ollama, llama.cpp; see ``agentrig.testing.personalities``.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Callable

from ._fake_bodies import FAULT_KINDS, Fault, mask_key
from ._fake_server import DEFAULT_KEY, TOOL_SUPPORT, FakeEndpoint, RecordedRequest
from .personalities import PERSONALITIES, make_personality

__all__ = ["DEFAULT_KEY", "FAULT_KINDS", "FakeEndpoint", "Fault", "RecordedRequest", "ThreadedFakeEndpoint",
           "add_server_arguments", "main", "mask_key", "serve_until_signal", "server_settings"]


class ThreadedFakeEndpoint:
    """A FakeEndpoint on its own event loop in a daemon thread; a context manager for sync code."""

    def __init__(self, endpoint: FakeEndpoint | None = None, **kwargs: Any):
        """``endpoint``: an endpoint object to serve (e.g. a ``GoldEndpoint``); else a
        ``FakeEndpoint(**kwargs)``."""
        self.endpoint = endpoint if endpoint is not None else FakeEndpoint(**kwargs)
        self.base_url = self.root_url = ""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> str:
        if self._thread is not None:
            return self.base_url
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = self._loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self.endpoint.start())
            except BaseException as exc:  # reported to the starting thread
                failure.append(exc)
                ready.set()
                loop.close()
                return
            ready.set()
            try:
                loop.run_forever()
            finally:
                loop.run_until_complete(self.endpoint.stop())
                loop.close()

        self._thread = threading.Thread(target=run, name="fake-endpoint", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            self._thread = None
            raise failure[0]
        self.base_url, self.root_url = self.endpoint.base_url, self.endpoint.root_url
        return self.base_url

    def stop(self) -> None:
        thread, self._thread = self._thread, None
        if thread is None:
            return
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._loop.stop)
        thread.join(timeout=10)

    def __enter__(self) -> "ThreadedFakeEndpoint":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def add_server_arguments(ap: Any, models: str) -> None:
    """The command-line options every served endpoint shares (this one and the scripted ones)."""
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--prefix", default="/v1")
    ap.add_argument("--models", default=models, help="comma-separated model ids")
    auth = ap.add_mutually_exclusive_group()
    auth.add_argument("--api-key-env", metavar="VAR", help="accept the key held in this environment variable")
    auth.add_argument("--no-auth", action="store_true", help="accept requests without a key")
    ap.add_argument("--delay-ms", type=float, default=0.0)
    ap.add_argument("--fault-rate", type=float, default=0.0)
    ap.add_argument("--fault-kinds", default="rate_limit,server_error,malformed")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--log", metavar="FILE", help="append every request to FILE as it is answered, one JSON line each "
                    "(method, path, status, usage, fault, X-Agentrig-* headers): a log that outlives the process")


def server_settings(args: Any) -> dict[str, Any] | str:
    """FakeEndpoint keyword arguments from those options, or an error message."""
    import os

    key: str | None = DEFAULT_KEY
    if args.no_auth:
        key = None
    elif args.api_key_env:
        key = os.environ.get(args.api_key_env)
        if not key:
            return f"environment variable {args.api_key_env} is not set; export it or use --no-auth"
    return {"models": tuple(m for m in args.models.split(",") if m), "api_key": key, "prefix": args.prefix,
            "delay_s": args.delay_ms / 1000, "fault_rate": args.fault_rate,
            "fault_kinds": tuple(k for k in args.fault_kinds.split(",") if k), "seed": args.seed,
            "host": args.host, "port": args.port, "log": args.log}


def serve_until_signal(ep: FakeEndpoint) -> None:
    """Start ``ep``, print its base URL as the first line of stdout, serve until SIGTERM/SIGINT."""
    import signal

    async def serve() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        print(await ep.start(), flush=True)
        try:
            await stop.wait()
        finally:
            await ep.stop()

    asyncio.run(serve())


def serve_main(ap: Any, argv: list[str] | None, make: Callable[[Any, dict[str, Any]], FakeEndpoint]) -> int:
    """An endpoint's command line: parse ``argv`` with ``ap`` (which holds ``add_server_arguments``),
    make the endpoint with ``make(args, settings)`` (the FakeEndpoint keyword arguments of
    ``server_settings``) and serve it until SIGTERM/SIGINT. A bad setting, or a ``ValueError`` from
    ``make``, is one ``error:`` line on stderr and exit code 2."""
    import sys

    args = ap.parse_args(argv)
    settings = server_settings(args)
    try:
        if isinstance(settings, str):
            raise ValueError(settings)
        ep = make(args, settings)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    serve_until_signal(ep)
    return 0


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m agentrig.testing.fake_endpoint",
                                 description="Serve a fake OpenAI-compatible endpoint until SIGTERM/SIGINT.")
    add_server_arguments(ap, "fake-model,fake-model-mini")
    ap.add_argument("--tool-support", choices=TOOL_SUPPORT, default="full")
    ap.add_argument("--no-record", action="store_true", help="do not keep request records (long benchmark runs)")
    ap.add_argument("--personality", choices=sorted(PERSONALITIES),
                    help="behave like a real server (see agentrig.testing.personalities)")
    ap.add_argument("--window", type=int, metavar="TOKENS", help="the personality's context window")
    return serve_main(ap, argv, lambda args, settings: FakeEndpoint(
        tool_support=args.tool_support, record=not args.no_record,
        personality=make_personality(args.personality, args.window), **settings))


if __name__ == "__main__":
    raise SystemExit(main())
