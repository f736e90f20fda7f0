"""τ²'s scripted endpoint, on the generic scripted-responder base of ``agentrig.testing``:
``gold_endpoint`` (a local OpenAI-compatible endpoint that plays every task's gold conversation —
agent, user simulator, NL judge, memory plug-in — from the request alone; ``python -m
agentrig.bench.tau.scripted.gold_endpoint``), its texts and the judge's reply included.
``Tau2Benchmark.scripted_endpoint`` hands it out through the seam (the demo)."""
