"""Advice: port isolation with safety analysis, adaptive routing and NCCL settings, what-if.

Pure analysis of a :class:`topology.model.Fabric` and health findings; nothing here changes the
fabric (``fabric.app.isolation.isolate`` does that, with an audit trail).
"""
