"""agentrig: a test rig for LLM agents — runs agents on benchmark tasks through any OpenAI-compatible
endpoint, many times over, and tells whether they succeed every time.

The package's folders, the floors their imports follow and the flow of a run: docs/architecture.md.
"""

__version__ = "0.1.0"
