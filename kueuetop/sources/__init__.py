"""I/O adapters that feed the store: the connection (kubeconfig, client), Kubernetes informers,
Prometheus queries, direct scrapes."""
