"""Decision tables for the admission engine."""
