"""The API server's storage: the object store (etcd + registry), the kinds it serves, and the
list snapshots behind continue tokens."""
