"""The Kubernetes parts of the simulated cluster: kube-scheduler, kubelets, Events and conditions,
pod and node faults."""
