"""Scenarios: the file format and loader, generated scenarios, node pools expanded into nodes,
scripted actions, and the built-in scenarios (*.yaml, package data)."""
