"""Typed, immutable Kueue and Kubernetes objects parsed from API JSON (stdlib only)."""
