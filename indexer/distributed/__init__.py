"""Work spread over a cluster: distributed embedding with Ray (``polyglot index add --engine ray``)."""
