"""I/O adapters that feed the store: Kubernetes informers, Prometheus queries, direct scrapes."""
