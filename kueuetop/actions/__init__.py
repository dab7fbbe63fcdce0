"""kueuetop's operator actions: hold, resume, requeue, preempt, and queue stop policies."""
