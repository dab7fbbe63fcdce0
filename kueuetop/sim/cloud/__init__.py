"""The cloud under the simulated cluster: node pools, the cluster autoscaler and queued
provisioning (DWS) answering ProvisioningRequests, GPUs and their DCGM exporters."""
