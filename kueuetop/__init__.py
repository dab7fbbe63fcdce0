"""kueuetop: a terminal console for GPU batch platforms that run Kueue on Kubernetes."""

__version__ = "0.1.0"
