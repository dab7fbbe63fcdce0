"""The job framework (a job <-> Workload reconciler) and its integrations: batch Jobs, plain pods,
Workloads created directly, and the kueue perf harness runner."""
