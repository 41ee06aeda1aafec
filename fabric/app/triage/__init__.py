"""Triage: is this bandwidth normal, and which node or cable is slow.

``read`` judges saved nccl-tests and ib_write_bw outputs as live runs are judged (``ibfab probe
read``); ``facts`` says what the fabric tells of a run's hosts (HCAs, rates, leaves); ``bisect``
finds the slow node or cable behind a slow collective in O(log n) rounds (``ibfab triage``).
"""
