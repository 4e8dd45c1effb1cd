"""The Kubernetes adapter: the real API server where the simulator stands in tests."""
