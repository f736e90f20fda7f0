"""The Ray executor: workers, cluster-wide slot leases and breaker, task data and keys for workers."""
