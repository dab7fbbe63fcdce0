"""The embedded admission controller: pure functions from a cluster snapshot to decisions.

Nothing here reads a clock, the network or the disk: callers pass `now` and the snapshot.
"""
