"""Kueue's controllers as the simulator runs them: the Kueue controller (scheduler + workload
controller), its metrics, its manager ConfigMap and the ProvisioningRequest admission check."""
