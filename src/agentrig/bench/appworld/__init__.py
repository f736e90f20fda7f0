"""AppWorld (Trivedi et al., 2024) behind the benchmark seam: tasks from its data/ tree, trials
played by our code agent against a world held by a worker process in AppWorld's own environment,
judged by AppWorld's own ``world.evaluate()``. See docs/appworld.md."""
