"""The embedded simulated cluster."""
